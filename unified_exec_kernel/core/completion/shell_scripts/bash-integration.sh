# unified-exec-kernel: OSC 133 semantic prompts for an interactive bash.
#
# core/shell_integration.py starts bash so that it reads this file, one of two ways:
# - UEXEC_BASH_STARTUP=rcfile: this file is bash's --rcfile; it sources what bash
#   would have read (the user's --rcfile, else ~/.bashrc), then installs the hooks;
# - UEXEC_BASH_STARTUP=prompt: for --norc and login shells, which read their startup
#   files themselves, the environment's PROMPT_COMMAND sources this file at the first
#   prompt, after every startup file has run.
# Either way the UEXEC_* variables leave the environment before anything else can
# inherit them, so a shell started inside this one is not integrated.
#
# Markers (ESC ] 133 ; ... BEL), each carrying uexec=<nonce> so that output which
# merely looks like a marker never passes for one of this session's:
#   A  prompt start (from the last PROMPT_COMMAND hook; typeahead=1 when a typed line
#      is already waiting, so the shell is about to run it rather than wait)
#   B  prompt end (the end of PS1)
#   C  command output start (PS0, printed after a command line is read)
#   D;<status>  the command line finished (first PROMPT_COMMAND hook), only when one
#      ran: an empty line, a comment, a syntax error or Ctrl-C at the prompt run none,
#      which bash's command number (\#) tells.
# The user's PROMPT_COMMAND runs between the two hooks at top level, as bash would run
# it, and sees the real $?; PS1 and PS0 are the user's with our marker appended.
# Each hook runs as `{ hook; } 2>/dev/null`: under `set -x` its trace (the nonce in it)
# goes nowhere, and the user's own hooks trace as they always did.
# The nonce comes through a pipe on the descriptor UEXEC_SHELL_INTEGRATION names,
# read and closed here before any file of the user's runs: it is in no environment.

__uexec_entry_status=$?  # bootstrap mode hands it back to the rest of PROMPT_COMMAND

# Parse the functions below without the user's aliases (bootstrap mode runs after them).
if builtin shopt -q expand_aliases; then __uexec_aliases=1; else __uexec_aliases=; fi
builtin shopt -u expand_aliases

__uexec_precmd() {
    local __uexec_status=$? __uexec_number=${__uexec_hash@P}
    if [[ $__uexec_number != "$__uexec_commands" ]]; then
        __uexec_commands=$__uexec_number
        builtin printf '\e]133;D;%s;uexec=%s\a' "$__uexec_status" "$__uexec_nonce"
    fi
    __uexec_unmark  # the user's hooks see their own prompts
    return "$__uexec_status"
}

__uexec_postcmd() {
    local __uexec_status=$? __uexec_typeahead=
    __uexec_wrapped || __uexec_wrap
    __uexec_unmark
    # B ends PS1 and C ends PS0 through a variable of ours: if PS1 is exported, a
    # shell started inside this one inherits the reference, not the marker
    if builtin shopt -q promptvars; then
        # \[\] (nothing readline shows) keeps a PS1 that ends in '$' from
        # reading our reference as `$$`, the shell's pid
        PS1+='\[\]${__uexec_b-}'
        PS0+='${__uexec_c-}'
    else
        PS1+=$__uexec_literal_b
        PS0+=$__uexec_literal_c
    fi
    # A complete line typed ahead (the terminal is still in line mode here) will run
    # at once: this prompt does not mean the shell waits.
    if builtin read -t 0; then __uexec_typeahead=';typeahead=1'; fi
    builtin printf '\e]133;A;uexec=%s%s\a' "$__uexec_nonce" "$__uexec_typeahead"
    return "$__uexec_status"
}

__uexec_read_nonce() {
    __uexec_nonce=
    local __uexec_fd=${UEXEC_SHELL_INTEGRATION-}
    [[ -n $__uexec_fd && $__uexec_fd != *[!0-9]* ]] || return 0
    IFS= builtin read -r -t 1 -u "$__uexec_fd" __uexec_nonce 2>/dev/null
    exec {__uexec_fd}<&-
}

__uexec_unmark() {
    PS1=${PS1-}; PS1=${PS1//'\[\]${__uexec_b-}'/}; PS1=${PS1//"$__uexec_literal_b"/}
    PS0=${PS0-}; PS0=${PS0//'${__uexec_c-}'/}; PS0=${PS0//"$__uexec_literal_c"/}
}

__uexec_install() {
    # \001 and \002 tell readline that B takes no room on the screen
    __uexec_b=$'\001\e]133;B;uexec='$__uexec_nonce$'\a\002'
    __uexec_c=$'\e]133;C;uexec='$__uexec_nonce$'\a'
    __uexec_literal_b='\[\e]133;B;uexec='$__uexec_nonce'\a\]'
    __uexec_literal_c='\e]133;C;uexec='$__uexec_nonce'\a'
    __uexec_hash='\#'
    __uexec_commands=${__uexec_hash@P}
    __uexec_pre_hook='{ __uexec_precmd; } 2>/dev/null'
    __uexec_post_hook='{ __uexec_postcmd; } 2>/dev/null'
    __uexec_wrap
}

# bash runs every element of an array PROMPT_COMMAND from 5.1 on, only [0] before.
__uexec_array_prompt_command() {
    [[ ${PROMPT_COMMAND+set} && ${PROMPT_COMMAND@a} == *a* ]] && (( BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1) ))
}

# Our hooks first and last, as __uexec_wrap leaves them.
__uexec_wrapped() {
    if __uexec_array_prompt_command; then
        [[ ${PROMPT_COMMAND[0]-} == "$__uexec_pre_hook" && ${PROMPT_COMMAND[-1]} == "$__uexec_post_hook" ]]
    else
        [[ ${PROMPT_COMMAND-} == "$__uexec_pre_hook"$'\n'* && $PROMPT_COMMAND == *$'\n'"$__uexec_post_hook" ]]
    fi
}

# Put the user's PROMPT_COMMAND between our two hooks: the first takes $? before
# anything of the user's can change it, the last prints A just before the prompt.
# Called again when a command reshaped PROMPT_COMMAND (`PROMPT_COMMAND="x; $PROMPT_COMMAND"`):
# where our hooks were, a no-op that keeps $? stays, so the user's text still parses.
# Newlines separate the parts: the user's text may end in ';' or '&'.
__uexec_wrap() {
    local __uexec_part
    if __uexec_array_prompt_command; then
        local -a __uexec_user=()
        for __uexec_part in "${PROMPT_COMMAND[@]}"; do
            if [[ $__uexec_part != "$__uexec_pre_hook" && $__uexec_part != "$__uexec_post_hook" ]]; then
                __uexec_part=${__uexec_part//__uexec_precmd/__uexec_pass}
                __uexec_user+=("${__uexec_part//__uexec_postcmd/__uexec_pass}")
            fi
        done
        builtin unset PROMPT_COMMAND
        PROMPT_COMMAND=("$__uexec_pre_hook" "${__uexec_user[@]}" "$__uexec_post_hook")
    else
        __uexec_part=${PROMPT_COMMAND-}
        if [[ $__uexec_part == "$__uexec_pre_hook"$'\n'* ]]; then __uexec_part=${__uexec_part#*$'\n'}; fi
        if [[ $__uexec_part == *$'\n'"$__uexec_post_hook" ]]; then __uexec_part=${__uexec_part%$'\n'*}; fi
        __uexec_part=${__uexec_part//__uexec_precmd/__uexec_pass}
        __uexec_part=${__uexec_part//__uexec_postcmd/__uexec_pass}
        builtin unset PROMPT_COMMAND
        PROMPT_COMMAND=$__uexec_pre_hook$'\n'${__uexec_part:+$__uexec_part$'\n'}$__uexec_post_hook
    fi
}

# PS0 and ${var@P} came with bash 4.4: older ones just run the user's startup files.
__uexec_supported() {
    (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )) && [[ -n $__uexec_nonce ]]
}

__uexec_forget_environment() {
    builtin unset UEXEC_SHELL_INTEGRATION UEXEC_BASH_STARTUP UEXEC_BASH_RCFILE \
        UEXEC_BASH_BOOTSTRAP UEXEC_BASH_PROMPT_COMMAND UEXEC_PARENT_PID
}

# PROMPT_COMMAND with the bootstrap text replaced by what it stood for: the
# environment's own PROMPT_COMMAND, or a command that does nothing, not even to $?,
# so that whatever the startup files put around it still parses and sees $?. The
# no-op is a group with its trace hidden, as the bootstrap was (under `set -x` a bare
# one traced `++ __uexec_pass` and `++ return 0` after every command); a
# PROMPT_COMMAND that was the bootstrap alone becomes empty.
__uexec_unbootstrap() {
    local __uexec_boot=$UEXEC_BASH_BOOTSTRAP __uexec_orig='{ __uexec_pass; } 2>/dev/null' __uexec_i
    if [[ -n ${UEXEC_BASH_PROMPT_COMMAND+set} ]]; then
        __uexec_orig=$UEXEC_BASH_PROMPT_COMMAND
    elif [[ ${PROMPT_COMMAND@a} != *a* && $PROMPT_COMMAND == "$__uexec_boot" ]]; then
        __uexec_orig=
    fi
    for __uexec_i in "${!PROMPT_COMMAND[@]}"; do
        PROMPT_COMMAND[__uexec_i]=${PROMPT_COMMAND[__uexec_i]//"$__uexec_boot"/"$__uexec_orig"}
    done
    # it came from the environment: a child must not inherit it
    builtin export -n PROMPT_COMMAND
}

__uexec_pass() {
    return "$?"
}

# Runs inside the first PROMPT_COMMAND, after the startup files.
__uexec_bootstrap() {
    __uexec_unbootstrap
    if [[ $PPID == "${UEXEC_PARENT_PID-}" ]]; then
        __uexec_read_nonce
    else
        # a shell that the startup files started and that inherited the bootstrap
        __uexec_nonce=
    fi
    __uexec_forget_environment
    if __uexec_supported; then
        __uexec_install
        # this prompt's A: the hooks run from the next prompt on
        __uexec_postcmd
    fi
    local __uexec_status=$__uexec_entry_status
    builtin unset __uexec_entry_status
    return "$__uexec_status"
}

if [[ $__uexec_aliases ]]; then builtin shopt -s expand_aliases; fi
builtin unset __uexec_aliases

# Top level, not a function: the user's file must run as bash would run it (a
# `declare` in it is global, a `return` ends the file).
if [[ ${UEXEC_BASH_STARTUP-} == rcfile ]]; then
    builtin unset __uexec_entry_status
    __uexec_read_nonce
    __uexec_rcfile=${UEXEC_BASH_RCFILE-'~/.bashrc'}
    __uexec_forget_environment
    # what bash does with an rc file name: expand a leading ~, open it from the
    # working directory (`.` alone would search PATH), skip it if missing
    if [[ $__uexec_rcfile == '~' || $__uexec_rcfile == '~/'* ]]; then
        __uexec_home=~
        __uexec_rcfile=$__uexec_home${__uexec_rcfile:1}
        builtin unset __uexec_home
    elif [[ $__uexec_rcfile != */* ]]; then
        __uexec_rcfile=./$__uexec_rcfile
    fi
    if [[ -e $__uexec_rcfile ]]; then . "$__uexec_rcfile"; fi
    builtin unset __uexec_rcfile
    if __uexec_supported; then __uexec_install; fi
elif [[ ${UEXEC_BASH_STARTUP-} == prompt ]]; then
    __uexec_bootstrap  # last: the rest of PROMPT_COMMAND sees the $? from before it
fi
