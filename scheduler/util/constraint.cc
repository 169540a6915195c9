#include "util/constraint.h"

#include <algorithm>

namespace phalanx {
namespace {

constexpr size_t kMaxFeatures = 64;

bool FeatureChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == ':' || c == '-';
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

bool Constraint::Matches(const std::vector<std::string>& features) const {
  if (any_of.empty()) return true;
  return std::any_of(any_of.begin(), any_of.end(), [&](const std::vector<std::string>& all) {
    return std::all_of(all.begin(), all.end(), [&](const std::string& f) {
      return std::find(features.begin(), features.end(), Lower(f)) != features.end();
    });
  });
}

std::string Constraint::ToString() const {
  std::string out;
  for (size_t i = 0; i < any_of.size(); ++i) {
    if (i > 0) out += '|';
    for (size_t j = 0; j < any_of[i].size(); ++j) {
      if (j > 0) out += '&';
      out += any_of[i][j];
    }
  }
  return out;
}

Result<Constraint> ParseConstraint(std::string_view text, std::string_view field) {
  const std::string where(field);
  Constraint c;
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return c;
  text = text.substr(first, text.find_last_not_of(" \t") - first + 1);
  const std::string quoted = "'" + std::string(text.substr(0, 80)) + "'";
  std::vector<std::string> all;
  std::string feature;
  size_t count = 0;
  bool blank = false;  // a blank since the last character of `feature`
  for (size_t i = 0; i <= text.size(); ++i) {
    const char ch = i < text.size() ? text[i] : '|';
    if (ch == ' ' || ch == '\t') {  // blanks around features and operators
      blank = !feature.empty();
      continue;
    }
    if (blank && ch != '&' && ch != '|') {
      return Fail(where, quoted + ": a blank between two features at position " + std::to_string(i) +
                             " (join them with & or |)");
    }
    blank = false;
    if (ch == '&' || ch == '|') {
      if (feature.empty()) {
        return Fail(where,
                    quoted + ": an empty feature at position " + std::to_string(i + 1) + " (FEATURE, A&B or A|B)");
      }
      if (++count > kMaxFeatures)
        return Fail(where, quoted + ": more than " + std::to_string(kMaxFeatures) + " features");
      all.push_back(std::move(feature));
      feature.clear();
      if (ch == '|') {
        c.any_of.push_back(std::move(all));
        all.clear();
      }
      continue;
    }
    if (!FeatureChar(ch)) {
      const bool printable = static_cast<unsigned char>(ch) >= 0x20 && static_cast<unsigned char>(ch) < 0x7f;
      const std::string shown =
          printable ? "'" + std::string(1, ch) + "'" : "byte " + std::to_string(static_cast<unsigned char>(ch));
      return Fail(where, quoted + ": " + shown + " at position " + std::to_string(i + 1) +
                             " is not supported (features are [A-Za-z0-9_.:-], joined by & and |; Slurm's "
                             "brackets, counts and parentheses are not supported)");
    }
    feature += ch;
  }
  return c;
}

std::vector<std::string> ModelFeatures(std::string_view model) {
  std::vector<std::string> out;
  if (model.empty()) return out;
  out.push_back(Lower(model));
  size_t start = 0;
  while (start <= model.size()) {
    const size_t dash = model.find('-', start);
    const std::string_view word =
        model.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start);
    if (!word.empty() && word.size() != model.size()) out.push_back(Lower(word));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  return out;
}

}  // namespace phalanx
