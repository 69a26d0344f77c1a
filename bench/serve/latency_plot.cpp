// bench/serve/latency_plot.cpp — data files, the gnuplot script, and running gnuplot.
#include "bench/serve/latency_plot.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/common/stats.h"
#include "core/error.h"

namespace fg::bench {

namespace {

struct Series {
  const char* file;
  const char* title;
  const char* y_label;
  const std::vector<double>* seconds;
};

std::vector<Series> series_of(const LatencySamples& s) {
  return {{"ttft.dat", "Time to first token", "fraction of requests", &s.ttft},
          {"tpot.dat", "Time per output token", "fraction of requests", &s.tpot},
          {"itl.dat", "Inter-token latency", "fraction of token gaps", &s.itl},
          {"e2el.dat", "End-to-end latency", "fraction of requests", &s.e2el}};
}

// A gnuplot single-quoted string: the only escape is '' for a quote.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A shell single-quoted word.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A private temporary folder, removed when the plot is done.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fullgraph_plot_XXXXXX").string();
    FG_CHECK(::mkdtemp(pattern.data()) != nullptr, "--plot: cannot create a temporary folder in {}",
             std::filesystem::temp_directory_path().string());
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string latency_plot_script(const LatencySamples& samples, const std::string& data_dir, const std::string& png_path,
                                const std::string& title) {
  std::vector<Series> shown;
  for (const Series& s : series_of(samples))
    if (!s.seconds->empty()) shown.push_back(s);
  const size_t rows = shown.size() > 2 ? 2 : 1, cols = shown.size() > 1 ? 2 : 1;
  std::string script;
  // pngcairo draws anti-aliased lines; the libgd `png` terminal is the fallback some builds have.
  script += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1400,1000 font ',10' } "
            "else { set terminal png size 1400,1000 }\n";
  script += fmt::format("set output {}\n", gp_quote(png_path));
  script += "set grid\nset key off\nset yrange [0:1]\nset xlabel 'ms'\n";
  script += fmt::format("set multiplot layout {},{} title {}\n", rows, cols, gp_quote(title));
  for (const Series& s : shown) {
    const double median_ms = median(*s.seconds) * 1e3, p99_ms = percentile(*s.seconds, 99.0) * 1e3;
    script += fmt::format("set title {}\n", gp_quote(fmt::format("{} ({} samples): median {:.2f} ms, p99 {:.2f} ms",
                                                                  s.title, s.seconds->size(), median_ms, p99_ms)));
    script += fmt::format("set ylabel {}\n", gp_quote(s.y_label));
    // Dashed verticals at the median and the p99: the two numbers the report prints.
    script += "unset arrow\n";
    script += fmt::format("set arrow from {0},0 to {0},1 nohead dt 2 lc rgb 'gray40'\n", median_ms);
    script += fmt::format("set arrow from {0},0 to {0},1 nohead dt 2 lc rgb 'red'\n", p99_ms);
    script += fmt::format("plot {} using 1:2 with steps lw 2 lc rgb '#1f77b4'\n",
                          gp_quote((std::filesystem::path(data_dir) / s.file).string()));
  }
  script += "unset multiplot\nset output\n";
  return script;
}

void write_latency_plot(const LatencySamples& samples, const std::string& png_path, const std::string& title) {
  const std::string gnuplot = find_gnuplot();
  FG_CHECK(!gnuplot.empty(), "--plot: gnuplot was not found on PATH (Debian: apt-get install gnuplot-nox)");
  const auto series = series_of(samples);
  FG_CHECK(std::any_of(series.begin(), series.end(), [](const Series& s) { return !s.seconds->empty(); }),
           "--plot: no request completed, so there is no latency to plot");

  TempDir tmp;
  for (const Series& s : series) {
    if (s.seconds->empty()) continue;
    std::vector<double> v = *s.seconds;
    std::sort(v.begin(), v.end());
    std::ofstream out(std::filesystem::path(tmp.path()) / s.file);
    for (size_t i = 0; i < v.size(); ++i)
      out << fmt::format("{} {}\n", v[i] * 1e3, static_cast<double>(i + 1) / static_cast<double>(v.size()));
    FG_CHECK(out.good(), "--plot: cannot write the data file {} in {}", s.file, tmp.path());
  }
  const std::string png = std::filesystem::absolute(png_path).string();
  std::error_code ignored;
  std::filesystem::remove(png, ignored);  // so that a stale PNG cannot pass for a new one
  const std::string script = latency_plot_script(samples, tmp.path(), png, title);
  const std::string log = (std::filesystem::path(tmp.path()) / "gnuplot.log").string();

  const std::string command = fmt::format("{} >{} 2>&1", sh_quote(gnuplot), sh_quote(log));
  FILE* pipe = ::popen(command.c_str(), "w");
  FG_CHECK(pipe != nullptr, "--plot: cannot start {}", gnuplot);
  const bool written = std::fwrite(script.data(), 1, script.size(), pipe) == script.size();
  const int status = ::pclose(pipe);
  std::ifstream log_in(log);
  const std::string output(std::istreambuf_iterator<char>(log_in), {});
  FG_CHECK(written && WIFEXITED(status) && WEXITSTATUS(status) == 0, "--plot: gnuplot failed (status {}): {}", status,
           output);
  FG_CHECK(std::filesystem::exists(png) && std::filesystem::file_size(png) > 0,
           "--plot: gnuplot wrote no image to {}: {}", png, output);
}

}  // namespace fg::bench
