# entry-names.awk: the entry points' names for the scripts, from
# src/read/entry_table.def: prints the sed commands that put them in place
# of @ENTRY_NAMES@ (as the debug lines and --info name them), @ENTRY_KEYS@
# (the api.KEY.* keys of --info --format=keys) and @ENTRY_BENCH_NAMES@
# (fasttime-bench's table and CSV), each a list joined by "|", in
# fasttime-bench's order.

# A row: from its "ENTRY(" to the line that ends in ")".
/^ENTRY\(/ { row = ""; in_row = 1 }
in_row { row = row " " $0 }
in_row && /\)[ \t]*$/ {
    in_row = 0
    sub(/^[ \t]*ENTRY\(/, "", row)
    sub(/\)[ \t]*$/, "", row)
    if (split(row, field, ",") != 8) {
        print "entry-names.awk: a row without eight fields: " row > "/dev/stderr"
        failed = 1
        exit 1
    }
    for (i = 1; i <= 8; i++) {
        gsub(/^[ \t]+|[ \t]+$/, "", field[i])
        gsub(/"/, "", field[i])
    }
    position = field[5] + 0
    if (position in name) {
        print "entry-names.awk: two rows at position " position > "/dev/stderr"
        failed = 1
        exit 1
    }
    name[position] = field[6]
    key[position] = field[7]
    bench[position] = field[8]
    rows++
}
END {
    if (failed)
        exit 1
    for (i = 0; i < rows; i++)
        if (!(i in name)) {
            print "entry-names.awk: no row at position " i > "/dev/stderr"
            exit 1
        }
    printf "s#@ENTRY_NAMES[@]#%s#g\n", joined(name)
    printf "s#@ENTRY_KEYS[@]#%s#g\n", joined(key)
    printf "s#@ENTRY_BENCH_NAMES[@]#%s#g\n", joined(bench)
}
function joined(list,    i, out) {
    out = list[0]
    for (i = 1; i < rows; i++)
        out = out "|" list[i]
    return out
}
