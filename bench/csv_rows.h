// The rows that every benchmark prints or writes with --csv (bench/README.md, "Recording a figure"):
//   date,commit,device,benchmark,case,metric,value,unit
// with the date in UTC. Header-only, for the programs under bench/.
#pragma once

#include <cstdio>
#include <ctime>
#include <ostream>
#include <string>
#include <utility>

namespace vh::bench {

/// Today's date in UTC, YYYY-MM-DD.
inline std::string utc_date() {
  char d[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(d, sizeof d, "%Y-%m-%d", std::gmtime(&now));
  return d;
}

/// The device field of a run of `ranks` ranks on `gpus` GPUs named `gpu` (fewer GPUs than ranks
/// where they share them, --share-gpus): "NVIDIA H200" for one rank, "NVIDIA H200 x 4",
/// "NVIDIA H200 x 1 shared by 4 ranks".
inline std::string gpus_device(const std::string& gpu, int gpus, int ranks) {
  std::string d = gpu;
  if (ranks > 1) d += " x " + std::to_string(gpus);
  if (gpus < ranks) d += " shared by " + std::to_string(ranks) + " ranks";
  return d;
}

/// Writes the header line at construction, then one line per row().
class CsvRows {
 public:
  CsvRows(std::ostream& out, std::string benchmark, std::string device, std::string commit)
      : out_(out), pre_(utc_date() + ',' + std::move(commit) + ','), benchmark_(std::move(benchmark)),
        device_(std::move(device)) {
    out_ << "date,commit,device,benchmark,case,metric,value,unit\n";
  }
  /// The device of the rows that follow.
  void device(std::string d) { device_ = std::move(d); }
  /// value printed with %.6g.
  void row(const std::string& cs, const std::string& metric, double value, const std::string& unit) {
    char v[32];
    std::snprintf(v, sizeof v, "%.6g", value);
    row(cs, metric, std::string(v), unit);
  }
  /// value already formatted.
  void row(const std::string& cs, const std::string& metric, const std::string& value, const std::string& unit) {
    out_ << pre_ << device_ << ',' << benchmark_ << ',' << cs << ',' << metric << ',' << value << ',' << unit << '\n';
  }

 private:
  std::ostream& out_;
  std::string pre_, benchmark_, device_;
};

}  // namespace vh::bench
