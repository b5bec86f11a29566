# SPDX-License-Identifier: MIT
# The roofline of a chip model with the measured jobs on it (make bench).
#   gnuplot -e "data='points.dat'; out='roofline.png'; title='maia100';
#               bw=1800; peaks='800 1500 3000'; names='bf16 mx9 mx6'" roofline.gp
# data: one job per line: flops per HBM byte, TFLOPS, label. bw in GB/s,
# peaks in TFLOPS. Each roof is min(peak, bw * intensity).
set terminal pngcairo noenhanced size 1100,700 font ",11"
set output out
set title sprintf("Roofline of %s: modeled jobs (make bench)", title)
set logscale xy
set xlabel "arithmetic intensity (flops per HBM byte)"
set ylabel "TFLOPS (modeled)"
set xrange [1:10000]
set grid
set key left top
roof(x, p) = (bw * x / 1000.0 < p) ? bw * x / 1000.0 : p
plot for [i=1:words(peaks)] roof(x, word(peaks, i) + 0) lw 2 \
	title sprintf("%s roof: %s TFLOPS, %g GB/s", word(names, i), word(peaks, i), bw), \
	data using 1:2:3 with labels point pt 7 ps 1.2 offset 1,0.6 font ",8" notitle
