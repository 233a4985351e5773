#include "cli/target_flags.h"

#include <filesystem>

#include <CLI/CLI.hpp>

namespace corral::cli {

std::vector<std::string> split_words(const std::string& text, std::string& error) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else {
      word += c;
    }
    in_word = true;
  }
  if (quote != 0) error = std::string("a ") + quote + " is not closed";
  if (in_word) words.push_back(std::move(word));
  return words;
}

void TargetFlags::add(CLI::App& app) {
  app.add_option("--target-cmd", cmd_,
                 "start this server for the test and stop it after (split into words as a "
                 "shell would, not run by one)");
  app.add_option("--target-ready", ready_,
                 "the target is ready when this URL answers 2xx, this port accepts, or a line "
                 "of its output matches 'log:PATTERN'");
  app.add_option("--target-ready-timeout", ready_timeout_,
                 "how long the target may take to be ready (default 10s)");
}

std::string TargetFlags::apply(nlohmann::json& load, const std::string& file) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!cmd_.empty()) {
    std::string error;
    std::vector<std::string> words = split_words(cmd_, error);
    if (!error.empty()) return "--target-cmd: " + error;
    if (words.empty()) return "--target-cmd: no command";
    load["target"]["cmd"] = words;
    load["target"]["cwd"] = fs::current_path(ec).string();
  } else if (load.contains("target") && load["target"].is_object()) {
    nlohmann::json& cwd = load["target"]["cwd"];
    const fs::path dir = fs::absolute(fs::path(file), ec).parent_path();
    if (cwd.is_null()) cwd = dir.string();
    if (cwd.is_string()) cwd = (dir / cwd.get<std::string>()).lexically_normal().string();
  }
  if (ready_.empty() && ready_timeout_.empty()) return "";
  if (!load.contains("target")) return "--target-ready: only with --target-cmd or a \"target\"";
  nlohmann::json& target = load["target"];
  if (!ready_timeout_.empty()) target["ready_timeout"] = ready_timeout_;
  if (ready_.empty()) return "";
  if (ready_.rfind("log:", 0) == 0) {
    target["ready"] = {{"log", ready_.substr(4)}};
  } else if (ready_.find_first_not_of("0123456789") == std::string::npos) {
    target["ready"] = {{"port", std::stol(ready_.substr(0, 6))}};
  } else if (ready_.rfind("http://", 0) == 0) {
    target["ready"] = {{"url", ready_}};
  } else {
    return "--target-ready " + ready_ + ": expected a URL (http://...), a port, or log:PATTERN";
  }
  return "";
}

}  // namespace corral::cli
