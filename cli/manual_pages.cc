#include "cli/manual_pages.h"

#include <cctype>
#include <vector>

#include "cli/docs.h"
#include "cli/roff.h"
#include "config/config.h"
#include "config/scenario/step_kind.h"

namespace corral::cli::manual {
namespace {

// A row of a Markdown table: its cells, trimmed; a '|' inside `code` or escaped (\|) is text.
std::vector<std::string> cells(std::string_view row) {
  std::vector<std::string> out;
  std::string cell;
  bool code = false;
  for (size_t i = 1; i < row.size(); ++i) {
    const char c = row[i];
    if (c == '`') code = !code;
    if (c == '\\' && i + 1 < row.size() && row[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (c == '|' && !code) {
      const size_t a = cell.find_first_not_of(' ');
      out.push_back(a == std::string::npos ? ""
                                           : cell.substr(a, cell.find_last_not_of(' ') - a + 1));
      cell.clear();
    } else {
      cell += c;
    }
  }
  return out;
}

struct Table {
  std::string heading;  // of the section it is in, without '#' and backticks
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The tables of docs/scenarios.md whose first column is "Field" or "Kind".
std::vector<Table> field_tables() {
  const std::string_view doc = docs::files().front().bytes;
  std::vector<Table> tables;
  std::string heading;
  Table* open = nullptr;
  for (size_t at = 0; at < doc.size();) {
    size_t end = doc.find('\n', at);
    if (end == std::string_view::npos) end = doc.size();
    const std::string_view line = doc.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("#")) {
      heading.clear();
      for (char c : line.substr(line.find(' ') + 1)) {
        if (c != '`') heading += c;
      }
    }
    if (!line.starts_with("|")) {
      open = nullptr;
    } else if (open != nullptr) {
      if (!line.starts_with("|---")) open->rows.push_back(cells(line));
    } else if (line.starts_with("| Field |") || line.starts_with("| Kind |")) {
      tables.push_back({heading, cells(line), {}});
      open = &tables.back();
    }
  }
  return tables;
}

// A row as a tagged paragraph: the first cell in bold, then "Header: cell." for the middle
// ones, then the last cell.
std::string roff_row(const std::vector<std::string>& header, const std::vector<std::string>& row) {
  if (row.empty()) return "";
  std::string out = ".TP\n" + roff::from_markdown(row.front()) + "\n";
  for (size_t i = 1; i + 1 < row.size() && i < header.size(); ++i) {
    out += roff::escape(header[i]) + ": " + roff::from_markdown(row[i]) + ".\n";
  }
  if (row.size() > 1) out += roff::from_markdown(row.back()) + "\n";
  return out;
}

// Each registered step kind: its field, the fields it takes, and what docs/scenarios.md's table
// of kinds says it does.
std::string step_kinds(const std::vector<Table>& tables) {
  std::string out = ".SH STEP KINDS\nA step's kind is set by the field that marks it.\n";
  for (const scenario::StepKind* kind : scenario::step_kinds()) {
    out += ".TP\n.B " + roff::escape(kind->name) + "\nMarked by \\fB" + roff::escape(kind->mark) +
           "\\fR. Fields: " + roff::escape(join(kind->fields)) + ".";
    for (const Table& t : tables) {
      if (t.header.front() != "Kind") continue;
      for (const std::vector<std::string>& row : t.rows) {
        if (row.front() == kind->name) out += " " + roff::from_markdown(row.back());
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string header(std::string_view title, int section, std::string_view part) {
  return ".TH " + std::string(title) + " " + std::to_string(section) + " \"\" \"corral " +
         CORRAL_VERSION + "\" \"" + std::string(part) + "\"\n" +
         ".\\\" Written by `corral man`, from the code and docs/scenarios.md: do not edit.\n";
}

std::string corral_head() {
  return ".SH NAME\ncorral \\- runs long-running API test scenarios at scale under a supervisor\n"
         ".SH SYNOPSIS\n.B corral\n[\\fB\\-\\-home\\fR \\fIDIR\\fR] \\fIVERB\\fR "
         "[\\fIOPTIONS\\fR]\n.br\n.B corral help\n[\\fIVERB\\fR]\n"
         ".SH DESCRIPTION\n"
         "corral runs API test scenarios (start a job, poll its status, start the next) as "
         "thousands of instances at once on a daemon that supervises one worker process per CPU, "
         "resumes them after a crash, and load-tests servers with virtual users and held "
         "connections. The daemon (\\fBcorral daemon\\fR, or \\fBcorral start\\fR in the "
         "background) keeps its socket, logs and journal in its home; every other verb talks "
         "to it there.\n.PP\n"
         "Every verb takes \\fB\\-\\-home\\fR \\fIDIR\\fR and \\fB\\-\\-help\\fR; "
         "\\fBcorral help\\fR \\fIVERB\\fR prints a verb's section of this page.\n";
}

std::string corral_tail() {
  return ".SH ENVIRONMENT\n"
         ".TP\n.B CORRAL_HOME\nThe home, when \\fB\\-\\-home\\fR is not given; else "
         "\\fI~/.corral\\fR. The package's service uses \\fI/var/lib/corral\\fR.\n"
         ".TP\n.B CORRAL_API\nHOST:PORT of a daemon's control API over TCP (its \\fBlisten\\fR "
         "setting): the verbs talk to it instead of the home's socket.\n"
         ".TP\n.B CORRAL_API_TOKEN\nThe bearer token sent with \\fBCORRAL_API\\fR, and the "
         "daemon's \\fBapi_token\\fR when its config sets none.\n"
         ".SH FILES\n"
         ".TP\n.I /etc/corral/config.json\nThe package's config file "
         "(\\fBcorral\\-config\\fR(5)).\n"
         ".TP\n.I /var/lib/corral\nThe package's home: corral.sock, logs/, the journal.\n"
         ".TP\n.I ~/.corral\nThe home of a daemon started by a user.\n"
         ".SH EXIT STATUS\n"
         ".TP\n.B 0\nSuccess; for \\fBcorral run\\fR, every instance passed.\n"
         ".TP\n.B 1\nA failure: an instance failed, a load test missed a threshold, a request "
         "to the daemon failed.\n"
         ".TP\n.B 2\nA wrong command line or an invalid file (scenario, config); nothing was "
         "started.\n"
         ".TP\n.B 3\nNo daemon answers in the home.\n"
         ".TP\n.B 4\nThe daemon cannot take it now (no worker ready, or it is stopping).\n"
         ".TP\n.B 78\nThe daemon cannot start (a bad config): systemd should not restart it "
         "quickly.\n"
         ".SH SEE ALSO\n.BR corral\\-config (5),\n.BR corral\\-scenario (5),\n"
         ".BR systemctl (1)\n";
}

std::string config_page() {
  std::string out = header("CORRAL-CONFIG", 5, "File Formats");
  out +=
      ".SH NAME\ncorral-config \\- the corral daemon's config file\n"
      ".SH DESCRIPTION\nA JSON object of the settings below, given with "
      "\\fBcorral daemon \\-\\-config\\fR \\fIFILE\\fR (the package's service reads "
      "\\fI/etc/corral/config.json\\fR). Every field is optional. A command-line flag overrides "
      "the file, and the file overrides the environment and the defaults. Durations are "
      "strings such as \"250ms\", \"10s\", \"5m\"; sizes are strings such as \"512MB\" or a "
      "number of bytes. \\fBcorral config check\\fR \\fIFILE\\fR reports every problem in a "
      "file; \\fBcorral config show\\fR prints each setting's value and where it came from.\n"
      ".SH FIELDS\n";
  for (const config::FieldDoc& f : config::field_docs()) {
    out += ".TP\n.B " + roff::escape(f.name) + "\n" + roff::escape(f.help);
    const bool vowel = std::string_view("aeiou").find(f.kind.front()) != std::string_view::npos;
    out += (f.help.ends_with('.') ? " " : ". ") + roff::escape((vowel ? "An " : "A ") + f.kind);
    if (!f.range.empty()) out += roff::escape(", from " + f.range);
    if (!f.choices.empty()) out += roff::escape(": one of " + join(f.choices));
    out += roff::escape("; default " + f.default_value + ".") + "\n";
  }
  out += ".SH SEE ALSO\n.BR corral (1),\n.BR corral\\-scenario (5)\n";
  return out;
}

std::string scenario_page() {
  const std::vector<Table> tables = field_tables();
  std::string out = header("CORRAL-SCENARIO", 5, "File Formats");
  out +=
      ".SH NAME\ncorral-scenario \\- the scenario files corral runs\n"
      ".SH DESCRIPTION\nA scenario is a JSON file with a name and a list of steps: "
      "start a job, poll its status until it is done, start the next one. "
      "\\fBcorral run\\fR \\fIFILE\\fR runs it as N instances; \\fBcorral load\\fR \\fIFILE\\fR "
      "runs it as a load test. This page lists the step kinds corral knows and the fields of a "
      "file and of each step; the guide, with examples, conditions and templates, is "
      "\\fI/usr/share/doc/corral/scenarios.md\\fR.\n";
  out += step_kinds(tables);
  for (const Table& t : tables) {
    if (t.header.front() == "Kind") continue;
    std::string title = t.heading == "The file" ? "the file" : t.heading + " fields";
    for (char& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += ".SH \"" + roff::escape(title) + "\"\n";
    for (const std::vector<std::string>& row : t.rows) out += roff_row(t.header, row);
  }
  out += ".SH SEE ALSO\n.BR corral (1),\n.BR corral\\-config (5)\n";
  return out;
}

}  // namespace corral::cli::manual
