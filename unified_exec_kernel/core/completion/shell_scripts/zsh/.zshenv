# unified-exec-kernel: OSC 133 semantic prompts for an interactive zsh.
#
# core/shell_integration.py starts zsh with ZDOTDIR pointing here. Each of our startup
# files (.zshenv, .zprofile, .zshrc, .zlogin) sources the user's file of the same name
# from where zsh would have found it (the original ZDOTDIR, else HOME), with ZDOTDIR
# as the user's files expect it, then points ZDOTDIR back here for the next stage.
# After the last stage ZDOTDIR is the user's again, so a zsh started inside this one
# is not integrated; the UEXEC_* variables leave the environment here, first.
#
# Markers (ESC ] 133 ; ... BEL), each carrying uexec=<nonce> so that output which
# merely looks like a marker never passes for one of this session's:
#   A  prompt start (last precmd hook; typeahead=1 when a typed line is already
#      waiting, so the shell is about to run it rather than wait)
#   B  prompt end (the end of PS1)
#   C  command output start (last preexec hook)
#   D;<status>  the command line finished (first precmd hook), only when one ran:
#      zsh calls preexec for none of an empty line, a parse error, Ctrl-C at the prompt.
# zsh hands every hook the same $?, so the user's precmd/preexec hooks see theirs.
# Each hook's body is a `{ ... } 2>/dev/null` group, so under `setopt xtrace` its trace
# (the nonce in it) goes nowhere (zsh calls hooks without a definition's redirections). The nonce comes through a pipe on the descriptor
# UEXEC_SHELL_INTEGRATION names, read and closed here, first: it is in no environment.

typeset -g __uexec_zdotdir=$ZDOTDIR
typeset -g __uexec_nonce=
if [[ ${UEXEC_SHELL_INTEGRATION-} == <-> ]]; then
    typeset -g __uexec_fd=$UEXEC_SHELL_INTEGRATION
    IFS= builtin read -r -t 1 -u $__uexec_fd __uexec_nonce 2>/dev/null
    exec {__uexec_fd}<&-
    unset __uexec_fd
fi
typeset -g __uexec_norcs=${UEXEC_ZSH_NORCS-}
# how the user's ZDOTDIR stands: unset, set, or exported (with its value)
if (( ${+UEXEC_ZSH_ZDOTDIR} )); then
    typeset -g __uexec_user_zdotdir=$UEXEC_ZSH_ZDOTDIR __uexec_user_zdotdir_kind=export
else
    typeset -g __uexec_user_zdotdir= __uexec_user_zdotdir_kind=unset
fi
unset UEXEC_SHELL_INTEGRATION UEXEC_ZSH_NORCS UEXEC_ZSH_ZDOTDIR
# ours only tells zsh where to read: nothing started meanwhile inherits it
typeset -g +x ZDOTDIR

# ZDOTDIR as the user's files expect it.
__uexec_user_dotdir() {
    builtin emulate -L zsh
    case $__uexec_user_zdotdir_kind in
        (unset) unset ZDOTDIR ;;
        (set) typeset -g +x ZDOTDIR=$__uexec_user_zdotdir ;;
        (export) typeset -gx ZDOTDIR=$__uexec_user_zdotdir ;;
    esac
}

# Remember what the user's file left in ZDOTDIR, and point zsh back here.
__uexec_our_dotdir() {
    builtin emulate -L zsh
    if (( ${+ZDOTDIR} )); then
        __uexec_user_zdotdir=$ZDOTDIR
        if [[ ${(t)ZDOTDIR} == *export* ]]; then
            __uexec_user_zdotdir_kind=export
        else
            __uexec_user_zdotdir_kind=set
        fi
    else
        __uexec_user_zdotdir_kind=unset
    fi
    if [[ -o rcs ]]; then
        typeset -g +x ZDOTDIR=$__uexec_zdotdir
    else
        __uexec_done  # the user's file turned RCS off: no further startup file comes
    fi
}

# The file the user's zsh would read at this stage, if any.
__uexec_user_file() {
    builtin emulate -L zsh
    REPLY=${ZDOTDIR:-$HOME}/$1
    [[ -z $__uexec_norcs && $REPLY != $__uexec_zdotdir/$1 && -r $REPLY ]]
}

__uexec_done() {
    builtin emulate -L zsh
    __uexec_user_dotdir
    unset __uexec_zdotdir __uexec_user_zdotdir __uexec_user_zdotdir_kind __uexec_norcs
    unfunction __uexec_user_dotdir __uexec_our_dotdir __uexec_user_file __uexec_done
}

__uexec_precmd() {
    {
        local __uexec_status=$?
        builtin emulate -L zsh
        if (( __uexec_ran )); then
            __uexec_ran=0
            builtin printf '\e]133;D;%s;uexec=%s\a' $__uexec_status $__uexec_nonce
        fi
        PS1=${PS1//$__uexec_ps1/}  # the user's hooks see their own prompt
    } 2>/dev/null
}

__uexec_precmd_last() {
    {
        builtin emulate -L zsh
        PS1=${PS1//$__uexec_ps1/}
        # an exported PS1 would carry B into a shell started inside this one
        [[ ${(t)PS1} == *export* ]] || PS1+=$__uexec_ps1
        # keep the order: D before the user's hooks, A after them
        preexec_functions=(${preexec_functions:#__uexec_preexec} __uexec_preexec)
        local __uexec_typeahead=
        # A complete line typed ahead (the terminal is still in line mode here) will
        # run at once: this prompt does not mean the shell waits.
        if (( __uexec_zselect )) && builtin zselect -t 0 -r 0 2>/dev/null; then __uexec_typeahead=';typeahead=1'; fi
        builtin printf '\e]133;A;uexec=%s%s\a' $__uexec_nonce $__uexec_typeahead
    } 2>/dev/null
}

__uexec_preexec() {
    {
        builtin emulate -L zsh
        precmd_functions=(__uexec_precmd ${precmd_functions:#__uexec_precmd(|_last)} __uexec_precmd_last)
        __uexec_ran=1
        builtin printf '\e]133;C;uexec=%s\a' $__uexec_nonce
    } 2>/dev/null
}

__uexec_install() {
    builtin emulate -L zsh
    [[ -n $__uexec_nonce ]] || return 0
    typeset -g __uexec_ran=0
    # ${PS1//$__uexec_ps1/} takes it literally (no GLOB_SUBST under emulate zsh)
    typeset -g __uexec_ps1=$'%{\e]133;B;uexec='$__uexec_nonce$'\a%}'
    typeset -g __uexec_zselect=0
    zmodload zsh/zselect 2>/dev/null && __uexec_zselect=1
    typeset -ga precmd_functions preexec_functions
    precmd_functions=(__uexec_precmd ${precmd_functions:#__uexec_precmd(|_last)} __uexec_precmd_last)
    preexec_functions=(${preexec_functions:#__uexec_preexec} __uexec_preexec)
}

if [[ -n $__uexec_norcs ]]; then
    # zsh -f: what /etc/zsh/zshenv left is all; our files still run, the user's don't
    setopt no_global_rcs
fi

__uexec_user_dotdir
if __uexec_user_file .zshenv; then builtin source $REPLY; fi
__uexec_our_dotdir
