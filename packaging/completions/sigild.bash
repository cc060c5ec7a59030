# SPDX-License-Identifier: MIT
# bash completion for sigild(8)

_sigild()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}

	case $prev in
	--socket|--ssh-agent-socket|--ssh-agent-upstream|--config|--master-key-file|--audit-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		return
		;;
	--state-dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		compopt -o filenames 2>/dev/null
		return
		;;
	--pwhash-ops|--pwhash-mem)
		return
		;;
	--workers)
		COMPREPLY=($(compgen -W "$(seq 1 "$(nproc 2>/dev/null || echo 4)")" -- "$cur"))
		return
		;;
	esac

	COMPREPLY=($(compgen -W '--socket --ssh-agent-socket --ssh-agent-upstream --state-dir --config --workers
		--foreground --allow-unlocked-memory --master-key-file --passphrase
		--pwhash-ops --pwhash-mem --ephemeral --audit-file --auto-lock --verbose --help
		--version' -- "$cur"))
}
complete -F _sigild sigild
