# SPDX-License-Identifier: MIT
# Plot of tests/bench/loadgen.py: sign throughput against connections.
# gnuplot -e "infile='throughput.tsv'; outfile='throughput.png'; subtitle='...'" loadgen-plot.gp
if (!exists("infile")) infile = 'throughput.tsv'
if (!exists("outfile")) outfile = 'throughput.png'
if (!exists("subtitle")) subtitle = ''
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title "Ed25519 sign requests/s over a Unix socket (depth 1)\n{/*0.8 ".subtitle."}"
set xlabel "connections (one client thread each)"
set ylabel "requests/s"
set logscale x 2
set logscale y 10
set xtics (1, 2, 4, 8, 16, 32)
set grid
set key top left
set datafile separator "\t"
plot infile using 1:2 with linespoints lw 2 pt 7 title "sigild (msgpack-rpc socket)", \
     infile using 1:4 with linespoints lw 2 pt 5 title "sigild (its ssh-agent socket)", \
     infile using 1:3 with linespoints lw 2 pt 9 title "OpenSSH ssh-agent"
