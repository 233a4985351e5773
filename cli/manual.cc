#include "cli/manual.h"

#include <algorithm>

#include "cli/manual_pages.h"
#include "cli/roff.h"

namespace corral::cli {
namespace {

using manual::join;

// "-n, --instances INT", or a positional's name.
std::string option_label(const OptionSpec& o) {
  if (o.positional) return o.names.front();
  std::vector<std::string> names(o.names.rbegin(), o.names.rend());  // short ones first
  std::string label = join(names, ", ");
  if (o.takes_value) label += " " + (o.value.empty() ? std::string("VALUE") : o.value);
  return label;
}

// The help of an option with what else is known of it: its values, default, and whether it is
// required or may be repeated.
std::string option_text(const OptionSpec& o) {
  std::string text = o.help;
  while (text.ends_with('.')) text.pop_back();
  if (!o.choices.empty()) text += ". One of: " + join(o.choices, ", ");
  if (!o.default_value.empty()) text += ". Default: " + o.default_value;
  if (o.required) text += ". Required";
  if (o.repeatable) text += ". May be given more than once";
  return text + (text.empty() ? "" : ".");
}

// "corral config check [options] file".
std::string synopsis(const std::string& path, const CommandSpec& c) {
  std::string line = path + " [options]";
  std::vector<std::string> subs;
  for (const CommandSpec& sub : c.subcommands) subs.push_back(sub.name);
  if (!subs.empty()) line += " " + join(subs, "|") + " ...";
  for (const OptionSpec& o : c.options) {
    if (!o.positional) continue;
    line += " " + std::string(o.required ? "" : "[") + o.names.front() +
            (o.repeatable ? "..." : "") + (o.required ? "" : "]");
  }
  return line;
}

std::string plain_help(const std::string& path, const CommandSpec& c) {
  std::string out = path + " - " + c.summary;
  if (!c.aliases.empty()) out += " (also: " + join(c.aliases, ", ") + ")";
  out += "\n\nUsage: " + synopsis(path, c) + "\n";
  if (!c.options.empty()) out += "\nOptions:\n";
  for (const OptionSpec& o : c.options) {
    const std::string label = option_label(o);
    out += "  " + label + std::string(label.size() < 28 ? 28 - label.size() : 1, ' ') +
           option_text(o) + "\n";
  }
  if (!c.subcommands.empty()) out += "\nSubcommands:\n";
  size_t width = 0;
  for (const CommandSpec& sub : c.subcommands) width = std::max(width, sub.name.size());
  for (const CommandSpec& sub : c.subcommands) {
    out += "  " + sub.name + std::string(width - sub.name.size() + 2, ' ') + sub.summary + "\n";
  }
  for (const CommandSpec& sub : c.subcommands) out += "\n" + plain_help(path + " " + sub.name, sub);
  return out;
}

std::string roff_command(const std::string& path, const CommandSpec& c) {
  std::string out = ".SS \"" + roff::escape(path) + "\"\n" + roff::escape(c.summary) + ".";
  if (!c.aliases.empty()) out += " Also called " + roff::escape(join(c.aliases, ", ")) + ".";
  out += "\n.PP\n.B " + roff::escape(synopsis(path, c)) + "\n";
  for (const OptionSpec& o : c.options) {
    if (o.names.front() == "--home") continue;  // every verb's; DESCRIPTION says so
    out += ".TP\n.B " + roff::escape(option_label(o)) + "\n" + roff::escape(option_text(o)) + "\n";
  }
  for (const CommandSpec& sub : c.subcommands) out += roff_command(path + " " + sub.name, sub);
  return out;
}

std::string corral_page() {
  std::string out = manual::header("CORRAL", 1, "User Commands");
  out += manual::corral_head();
  out += ".SH VERBS\n";
  for (const CommandSpec& verb : describe_all()) out += roff_command("corral " + verb.name, verb);
  out += manual::corral_tail();
  return out;
}

}  // namespace

std::vector<std::string> man_page_names() {
  return {"corral.1", "corral-config.5", "corral-scenario.5"};
}

std::optional<std::string> man_page(std::string_view name) {
  if (name == "corral" || name == "corral.1") return corral_page();
  if (name == "corral-config" || name == "corral-config.5") return manual::config_page();
  if (name == "corral-scenario" || name == "corral-scenario.5") return manual::scenario_page();
  return std::nullopt;
}

std::string verb_help(const CommandSpec& verb) { return plain_help("corral " + verb.name, verb); }

}  // namespace corral::cli
