#include "options.h"

#include <algorithm>

#include "util/numbers.h"

namespace phalanx::cli {
namespace {

const OptionSpec* FindLong(std::span<const OptionSpec> specs, std::string_view name) {
  auto it = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.name == name; });
  return it == specs.end() ? nullptr : &*it;
}

const OptionSpec* FindShort(std::span<const OptionSpec> specs, char c) {
  auto it = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.short_name == c; });
  return it == specs.end() ? nullptr : &*it;
}

void Store(ParsedOptions& out, const OptionSpec& spec, std::string value, std::string flag, std::string_view where) {
  const std::string key(spec.key.empty() ? spec.name : spec.key);
  out.values[key] = OptionValue{std::move(value), std::move(flag), std::string(where)};
}

std::string SwitchValue(const OptionSpec& spec) { return spec.set.empty() ? "true" : std::string(spec.set); }

}  // namespace

void ParsedOptions::OverrideWith(const ParsedOptions& other) {
  for (const auto& [key, value] : other.values) values[key] = value;
}

Result<ParsedOptions> ParseOptions(std::span<const std::string> args, std::span<const OptionSpec> specs,
                                   Positionals mode, std::string_view where) {
  ParsedOptions out;
  const std::string w(where);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.dashdash = true;
      out.positional.insert(out.positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (mode == Positionals::kStopAtFirst) {
        out.positional.insert(out.positional.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        break;
      }
      out.positional.push_back(a);
      continue;
    }
    if (a.starts_with("--")) {
      std::string name = a.substr(2);
      std::string value;
      bool inline_value = false;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
      }
      const OptionSpec* spec = FindLong(specs, name);
      if (spec == nullptr) return Fail(w, "unknown option '--" + name + "' (see --help)");
      if (spec->value.empty()) {
        if (inline_value) return Fail(w, "option '--" + name + "' takes no value");
        Store(out, *spec, SwitchValue(*spec), "--" + name, where);
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= args.size())
          return Fail(w, "option '--" + name + "' needs a value (" + std::string(spec->value) + ")");
        value = args[++i];
      }
      Store(out, *spec, std::move(value), "--" + name, where);
      continue;
    }
    // Short options, possibly bundled: -lN, -G8, -G 8.
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      const std::string flag = std::string("-") + c;
      const OptionSpec* spec = FindShort(specs, c);
      if (spec == nullptr) return Fail(w, "unknown option '" + flag + "' (see --help)");
      if (spec->value.empty()) {
        Store(out, *spec, SwitchValue(*spec), flag, where);
        continue;
      }
      std::string value = a.substr(j + 1);
      if (value.empty()) {
        if (i + 1 >= args.size())
          return Fail(w, "option '" + flag + "' needs a value (" + std::string(spec->value) + ")");
        value = args[++i];
      }
      Store(out, *spec, std::move(value), flag, where);
      break;
    }
  }
  return out;
}

Result<std::vector<std::string>> SplitWords(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    if (c == '#' && !in_word) break;
    in_word = true;
    if (c == '\\') {
      if (i + 1 >= line.size()) return Fail("", "trailing backslash");
      word += line[++i];
    } else if (c == '\'' || c == '"') {
      const size_t close = line.find(c, i + 1);
      if (close == std::string_view::npos) return Fail("", std::string("unterminated ") + c + " quote");
      word += line.substr(i + 1, close - i - 1);
      i = close;
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::string OptionsHelp(std::span<const OptionSpec> specs) {
  std::vector<std::string> lefts;
  size_t width = 0;
  for (const OptionSpec& s : specs) {
    std::string left = s.short_name ? std::string("  -") + s.short_name + ", " : std::string("      ");
    left += "--" + std::string(s.name) + (s.value.empty() ? "" : " " + std::string(s.value));
    width = std::max(width, left.size() + 2);
    lefts.push_back(std::move(left));
  }
  std::string out;
  for (size_t i = 0; i < specs.size(); ++i) {
    lefts[i].resize(width, ' ');
    out += lefts[i] + std::string(specs[i].help) + "\n";
  }
  return out;
}

Result<uint64_t> ParseCount(std::string_view text, uint64_t lo, uint64_t hi) {
  auto v = ParseWholeNumber<uint64_t>("", text);
  PHX_RETURN_IF_ERROR(v);
  if (*v < lo || *v > hi) {
    return Fail("", "'" + std::string(text) + "' is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return *v;
}

}  // namespace phalanx::cli
