# gnuplot -e "csv='curves.csv'; png='docs/results/attention-curves.png'" tools/attention_curves.gp
# (rows sorted by kind, so that each kind's points are joined: docs/results/attention-curves.csv)
# Time and peak memory of one attention layer's forward + backward against T, per kind,
# from the CSV of hkt-bench-attention --curves --csv (T,kind,fwd_ms,fwdbwd_ms,peak_mib).
set terminal pngcairo size 1200,480 font ",10"
set output png
set datafile separator ","
set key top left
set logscale xy 2
set xlabel "T"
set grid
set multiplot layout 1,2
kinds = "mha hkt3 local performer elu1 htr"
titles = "MHA HKT(L=3) local(w=64) Performer(FAVOR+,m=256) Performer(elu+1,m=dh) H-Transformer-1D(N=16)"
set ylabel "forward + backward, ms"
set title "time (B = 1, H = 4, dh = 32, float32)"
plot for [i=1:6] csv using (strcol(2) eq word(kinds,i) ? $1 : NaN):4 every ::1 with linespoints title word(titles,i)
set ylabel "peak RSS, MiB"
set title "peak resident memory of the process"
unset logscale y
set logscale y 2
plot for [i=1:6] csv using (strcol(2) eq word(kinds,i) ? $1 : NaN):5 every ::1 with linespoints title word(titles,i)
unset multiplot
