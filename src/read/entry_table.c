/* The entry-point table (entry_table.h). */
#include "config.h"

#include "entry_table.h"

const struct entry_row entry_table[ENTRY_COUNT] = {
#define ENTRY(id, form, clock, bit, bench_position, name, key, bench_name)                         \
	[ENTRY_##id] = { CLOCK_API_##id, clock, name, key, bench_name },
#include "entry_table.def"
#undef ENTRY
};
