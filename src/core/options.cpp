#include "core/options.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace vh {

bool Options::has(const std::string& key) const {
  auto it = value.find(key);
  return it != value.end() && !it->second.empty();
}

std::string Options::text(const std::string& key) const {
  auto it = value.find(key);
  if (it == value.end()) throw std::logic_error("option not in the table: " + key);
  return it->second;
}

std::string Options::where(const std::string& key) const {
  auto it = origin.find(key);
  const std::string w = it == origin.end() ? "default" : it->second;
  return w + ": " + key + " = '" + text(key) + "'";
}

long Options::integer(const std::string& key) const {
  const std::string s = text(key);
  std::size_t pos = 0;
  long v = 0;
  try {
    v = std::stol(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (s.empty() || pos != s.size()) throw InputError(where(key) + " is not an integer");
  return v;
}

namespace {
/// The whole of s as a double, or NaN.
double whole_double(const std::string& s) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  return pos == s.size() && !s.empty() ? v : std::numeric_limits<double>::quiet_NaN();
}
}  // namespace

double Options::real(const std::string& key) const {
  const std::string s = text(key);
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  // A ratio a/b is allowed, so that 2/3 means two thirds to the last bit.
  const auto slash = s.find('/');
  const double v = slash == std::string::npos ? whole_double(s)
                                              : whole_double(s.substr(0, slash)) / whole_double(s.substr(slash + 1));
  if (!std::isfinite(v)) throw InputError(where(key) + " is not a finite real number (or ratio a/b)");
  return v;
}

bool Options::boolean(const std::string& key) const {
  const std::string s = text(key);
  if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
  if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  throw InputError(where(key) + " is not a boolean (allowed: true, false, yes, no, on, off, 1, 0)");
}

std::vector<double> Options::reals(const std::string& key) const {
  std::vector<double> out;
  std::stringstream ss(text(key));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    const std::string t = item.substr(b, e - b + 1);
    std::size_t pos = 0;
    double v = 0;
    try {
      v = std::stod(t, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != t.size() || !std::isfinite(v))
      throw InputError(where(key) + " is not a comma-separated list of real numbers");
    out.push_back(v);
  }
  return out;
}

std::string Options::choice(const std::string& key, const std::vector<std::string>& allowed) const {
  const std::string s = text(key);
  std::string list;
  for (const auto& a : allowed) {
    if (s == a) return s;
    list += (list.empty() ? "" : ", ") + a;
  }
  throw InputError(where(key) + " is not allowed (allowed: " + list + ")");
}

}  // namespace vh
