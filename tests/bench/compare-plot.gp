# SPDX-License-Identifier: MIT
# Plot of tests/bench/compare.py --sweep: sign throughput against
# connections, the new sigild, the baseline build and stock ssh-agent.
# gnuplot -e "infile='compare.tsv'; outfile='throughput.png'; subtitle='...'; newname='...'; basename='...'" compare-plot.gp
if (!exists("infile")) infile = 'compare.tsv'
if (!exists("outfile")) outfile = 'throughput.png'
if (!exists("subtitle")) subtitle = ''
if (!exists("newname")) newname = 'sigild'
if (!exists("basename")) basename = 'sigild (baseline)'
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title "Ed25519 sign requests/s over a Unix socket, median of the rounds\n{/*0.8 ".subtitle."}"
set xlabel "connections (one client thread each)"
set ylabel "requests/s"
set logscale x 2
set logscale y 10
set yrange [500:1000000]
set xtics (1, 2, 4, 8, 16, 32)
set grid
set key bottom right
set datafile separator "\t"
plot infile using 1:2 with linespoints lw 2 pt 7 title newname." (depth 1)", \
     infile using 1:3 with linespoints lw 2 pt 5 title basename." (depth 1)", \
     infile using 1:4 with linespoints lw 2 pt 11 title newname." (16 in flight)", \
     infile using 1:5 with linespoints lw 2 pt 13 title basename." (16 in flight)", \
     infile using 1:6 with linespoints lw 2 pt 9 title "OpenSSH ssh-agent"
