# unified-exec-kernel: the user's .zprofile (see .zshenv here)
__uexec_user_dotdir
if __uexec_user_file .zprofile; then builtin source $REPLY; fi
__uexec_our_dotdir
