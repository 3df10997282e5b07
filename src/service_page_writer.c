/* The service's side of a calibration service's page: the file made
 * beside its path under a temporary name and mapped over the table
 * read-write, its directory, the lock that keeps one service per page,
 * its name given (published) and taken away. */
#include "config.h"

#include "service_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes path's directory, one level, as the service's defaults need:
 * /run/fasttime for everyone to read, $XDG_RUNTIME_DIR/fasttime for its
 * user alone. */
static bool service_page_make_directory(const char *path, char *error, size_t error_len)
{
	mode_t mode = geteuid() == 0 ? 0755 : 0700;
	char directory[PATH_MAX];
	char *slash;

	snprintf(directory, sizeof directory, "%s", path);
	slash = strrchr(directory, '/');
	if (slash == NULL || slash == directory)
		return true;
	*slash = '\0';
	if (mkdir(directory, mode) != 0) {
		if (errno == EEXIST)
			return true;
		snprintf(error, error_len, "cannot make %s: %s", directory, strerror(errno));
		return false;
	}
	/* Set again: mkdir's mode is cut by the umask, and every reader of
	 * the system's page must be able to enter its directory. */
	if (chmod(directory, mode) != 0) {
		snprintf(error, error_len, "cannot set the mode of %s: %s", directory,
			 strerror(errno));
		return false;
	}
	return true;
}

/* One service per page: a lock file beside it, held for the service's
 * life. A second service on the same path would rename its page over the
 * first's, which would go on calibrating for nobody. */
static bool service_page_lock(struct service_page_writer *writer, char *error, size_t error_len)
{
	writer->lock_fd = open(writer->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (writer->lock_fd < 0) {
		snprintf(error, error_len, "cannot open %s: %s", writer->lock, strerror(errno));
		return false;
	}
	if (flock(writer->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		snprintf(error, error_len, "another service publishes %s (%s is locked)",
			 writer->path, writer->lock);
		close(writer->lock_fd);
		writer->lock_fd = -1;
		return false;
	}
	return true;
}

bool service_page_create(struct service_page_writer *writer, const char *path,
			 const struct settings *settings, char *error, size_t error_len)
{
	struct service_page_header header = {
		.magic = SERVICE_PAGE_MAGIC,
		.version = SERVICE_PAGE_VERSION,
		.size = SERVICE_PAGE_SIZE,
		.service_pid = (int32_t)getpid(),
		.interval_ms = settings->interval_ms,
		.hidden_hwcaps = settings->hidden_hwcaps,
		.force = settings->force,
	};
	struct stat st;
	int fd, written;

	service_page_time_namespace(&header.time_ns_device, &header.time_ns_inode);
	memset(writer, 0, sizeof *writer);
	writer->lock_fd = -1;
	written = snprintf(writer->path, sizeof writer->path, "%s", path);
	if (written <= 0 || written >= (int)sizeof writer->path ||
	    snprintf(writer->temporary, sizeof writer->temporary, "%s.XXXXXX", path) >=
		(int)sizeof writer->temporary ||
	    snprintf(writer->lock, sizeof writer->lock, "%s.lock", path) >=
		(int)sizeof writer->lock) {
		snprintf(error, error_len, "the page's path is too long");
		return false;
	}
	if (!service_page_make_directory(path, error, error_len) ||
	    !service_page_lock(writer, error, error_len))
		return false;
	fd = mkostemp(writer->temporary, O_CLOEXEC);
	if (fd < 0) {
		snprintf(error, error_len, "cannot make %s: %s", writer->temporary,
			 strerror(errno));
		writer->temporary[0] = '\0';
		service_page_remove(writer);
		return false;
	}
	memcpy(table_page.header, &header, sizeof header);
	if (fchmod(fd, 0644) != 0 ||
	    write(fd, &table_page, SERVICE_PAGE_SIZE) != (ssize_t)SERVICE_PAGE_SIZE ||
	    fstat(fd, &st) != 0 ||
	    mmap(&table_page, SERVICE_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0) == MAP_FAILED) {
		snprintf(error, error_len, "cannot write %s: %s", writer->temporary,
			 strerror(errno));
		close(fd);
		service_page_remove(writer);
		return false;
	}
	writer->device = st.st_dev;
	writer->inode = st.st_ino;
	close(fd);
	return true;
}

bool service_page_publish(struct service_page_writer *writer, char *error, size_t error_len)
{
	if (rename(writer->temporary, writer->path) != 0) {
		snprintf(error, error_len, "cannot name the page %s: %s", writer->path,
			 strerror(errno));
		return false;
	}
	writer->temporary[0] = '\0';
	writer->published = true;
	return true;
}

void service_page_remove(struct service_page_writer *writer)
{
	struct stat st;

	if (writer->temporary[0] != '\0')
		unlink(writer->temporary);
	if (writer->published && stat(writer->path, &st) == 0 && st.st_dev == writer->device &&
	    st.st_ino == writer->inode)
		unlink(writer->path);
	writer->published = false;
	writer->temporary[0] = '\0';
	/* Unlinked while held: a service starting meanwhile makes its own. */
	if (writer->lock_fd >= 0) {
		unlink(writer->lock);
		close(writer->lock_fd);
		writer->lock_fd = -1;
	}
}
