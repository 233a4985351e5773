// The scripts `corral completion SHELL` prints. Each only hands the words before the cursor and
// the word at it to `corral completion --words --` and offers the lines it prints
// (cli/completion.cc decides them); errors are dropped so that a Tab never prints. The program
// called back is the one on the command line ("~/" read as $HOME), so that completing
// ./build/corral asks that build.
#include "cli/completion.h"

namespace corral::cli {
namespace {

// A lone directory gets no space after it, so that the next Tab descends into it.
constexpr const char* kBashScript = R"sh(# bash completion for corral. Load it with
#   source <(corral completion bash)
# or install it as /usr/share/bash-completion/completions/corral.
_corral() {
    local program=${COMP_WORDS[0]/#\~/$HOME}
    local current=${COMP_WORDS[COMP_CWORD]}
    COMPREPLY=()
    mapfile -t COMPREPLY < <("$program" completion --words -- \
        "${COMP_WORDS[@]:0:COMP_CWORD}" "$current" 2>/dev/null)
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}
complete -F _corral corral
)sh";

// Loaded from $fpath, the file is _corral's body; sourced, it defines _corral and registers it.
// Directories are added without a suffix, so that the next Tab descends into them.
constexpr const char* kZshScript = R"sh(#compdef corral
# zsh completion for corral. Put it on $fpath as _corral before compinit runs, or load it after
# compinit with
#   source <(corral completion zsh)
_corral() {
  local program=${words[1]/#\~/$HOME}
  local -a candidates directories others
  candidates=(${(f)"$("$program" completion --words -- "${(@Q)words[1,CURRENT-1]}" \
      "${(Q)PREFIX}" 2>/dev/null)"})
  directories=(${(M)candidates:#*/})
  others=(${candidates:#*/})
  (( ${#directories} )) && compadd -S '' -- "${directories[@]}"
  (( ${#others} )) && compadd -- "${others[@]}"
  return 0
}
if [[ $funcstack[1] == _corral ]]; then
  _corral "$@"
else
  compdef _corral corral
fi
)sh";

constexpr const char* kFishScript = R"sh(# fish completion for corral. Install it as
# vendor_completions.d/corral.fish (or ~/.config/fish/completions/corral.fish), or load it with
#   corral completion fish | source
function __corral_complete
    set -l words (commandline -opc)
    set -l current (commandline -ct)
    set -l program (string replace -r '^~/' "$HOME/" -- $words[1])
    $program completion --words -- $words "$current" 2>/dev/null
end
complete -c corral -f -a '(__corral_complete)'
)sh";

}  // namespace

std::vector<std::string> completion_shells() { return {"bash", "zsh", "fish"}; }

std::string completion_script(const std::string& shell) {
  if (shell == "bash") return kBashScript;
  if (shell == "zsh") return kZshScript;
  if (shell == "fish") return kFishScript;
  return "";
}

}  // namespace corral::cli
