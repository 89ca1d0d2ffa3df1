"""benchreport - the work of scripts/bench/bench-report.py, by role.

load: the guest's channel logs (and fio's JSON) into records, and
      results.json written and read back;
compute: record lookups, ratios, kernel CPU per GiB, number formatting;
targets_table: the rows of a target's "Targets" table (met / not met);
tables: the per-workload, per-second, ratio and neighbour tables;
tools: the uncached_bench and fio side-by-side section;
render: report.md, from the parts above;
plot: the PNG plots (gnuplot);
demo: make demo's closing side-by-side summary.
Standard library only.
"""
