/* /proc/self and the affinity mask, read for the benchmark's reports. */
#include "config.h"

#include "bench_proc.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

bool bench_proc_task_line(long tid, const char *file, char *line, size_t size)
{
	char path[64];
	bool found;
	FILE *f;

	snprintf(path, sizeof path, "/proc/self/task/%ld/%s", tid, file);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	found = fgets(line, (int)size, f) != NULL;
	fclose(f);
	return found;
}

/* The command name may hold spaces and parentheses: the fields start after
 * the last parenthesis. */
const char *bench_proc_task_stat(long tid, char *line, size_t size)
{
	char *paren;

	if (!bench_proc_task_line(tid, "stat", line, size) ||
	    (paren = strrchr(line, ')')) == NULL || paren[1] != ' ')
		return NULL;
	return paren + 2;
}

bool bench_proc_value(const char *path, const char *key, uint64_t *value)
{
	size_t length = strlen(key);
	char line[256];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, length) == 0 && line[length] == ':')
			found = sscanf(line + length + 1, "%" SCNu64, value) == 1;
	fclose(f);
	return found;
}

unsigned bench_proc_allowed_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return 0;
	return (unsigned)CPU_COUNT(&set);
}
