# A per-worker timeline of a wslab trace: one row per thread, time to the right, each task a box
# coloured by where it came from, parked time in grey, white where the thread did neither
# (looking for work, waiting for a lock, or descheduled).
#
# Input: the file Recorder::write_timeline_csv() writes (see recorder.hpp for its layout).
#   gnuplot -e "datafile='trace.csv'; outfile='trace.png'" harness/trace/timeline.gp
# Optional: plottitle='...', width=1600 (pixels).

if (!exists("datafile")) { print "timeline.gp: set datafile='<timeline csv>'"; exit status 2 }
if (!exists("outfile")) outfile = datafile . ".png"
if (!exists("plottitle")) plottitle = datafile
if (!exists("width")) width = 1600

# Block 0 lists the rows; its length sets the picture's height.
stats datafile index 0 using 1 nooutput
rows = STATS_records
stats datafile index 0 using 3 nooutput
xmin = STATS_min
stats datafile index 0 using 4 nooutput
xmax = STATS_max
height = 140 + 36 * rows

set terminal pngcairo size width, height font "sans,10"
set output outfile
set title plottitle noenhanced
set xlabel "time since the recording started (microseconds)"
set yrange [-0.6 : rows - 0.4]
set ytics nomirror
set xtics nomirror
set xrange [xmin : xmax]
set grid xtics lc rgb "#e0e0e0"
set key outside bottom center horizontal
set style fill solid 1.0 noborder

# kind: 0 own queue, 1 global queue, 2 stolen, 3 parked
color(k) = k == 0 ? 0x1f77b4 : k == 1 ? 0xff7f0e : k == 2 ? 0xd62728 : 0xc8c8c8
half(k) = k == 3 ? 0.42 : 0.32

plot datafile index 0 using (NaN):1:ytic(2) notitle, \
     datafile index 1 using (($2 + $3) / 2):1:(($3 - $2) / 2):(half($4)):(color($4)) \
       with boxxyerror lc rgb variable notitle, \
     keyentry with boxes lc rgb "#1f77b4" title "task from its own queue", \
     keyentry with boxes lc rgb "#ff7f0e" title "task from the global queue", \
     keyentry with boxes lc rgb "#d62728" title "stolen task", \
     keyentry with boxes lc rgb "#c8c8c8" title "parked"
