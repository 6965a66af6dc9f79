# unified-exec-kernel: the user's .zlogin, the last startup file (see .zshenv here)
__uexec_user_dotdir
if __uexec_user_file .zlogin; then builtin source $REPLY; fi
__uexec_our_dotdir
(( ${+functions[__uexec_done]} )) && __uexec_done
