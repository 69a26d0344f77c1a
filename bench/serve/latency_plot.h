// bench/serve/latency_plot.h — `bench serve --plot FILE.png`: the empirical CDFs of TTFT, TPOT,
// ITL and E2E latency in one PNG, drawn by gnuplot.
//
// gnuplot is a separate program (Debian: gnuplot-nox), not a library: the samples go to temporary
// data files, the script goes down a pipe to `gnuplot`, and its stderr is kept for the error
// message. CDFs rather than histograms because they need no bin width and show the tail that the
// p99 in the report summarises.
#pragma once

#include <string>

#include "bench/serve/metrics.h"

namespace fg::bench {

// The gnuplot program on PATH, or "" when there is none.
std::string find_gnuplot();

// The gnuplot script that draws `samples` (seconds; plotted in ms) from the data files in
// `data_dir` into `png_path`. Series without samples are left out of the layout.
std::string latency_plot_script(const LatencySamples& samples, const std::string& data_dir, const std::string& png_path,
                                const std::string& title);

// Draws the PNG. Errors name --plot: gnuplot missing, nothing to plot, gnuplot failing (with
// what it printed), or no PNG written.
void write_latency_plot(const LatencySamples& samples, const std::string& png_path, const std::string& title);

}  // namespace fg::bench
