# unified-exec-kernel: the user's .zshrc, then the hooks (see .zshenv here)
__uexec_user_dotdir
if __uexec_user_file .zshrc; then builtin source $REPLY; fi
__uexec_our_dotdir
__uexec_install
unfunction __uexec_install
if [[ -n $__uexec_norcs ]]; then
    # as zsh -f leaves them; no .zlogin (ours included) comes then
    setopt no_rcs global_rcs
fi
if [[ ! -o login || ! -o rcs ]] && (( ${+functions[__uexec_done]} )); then
    __uexec_done
fi
