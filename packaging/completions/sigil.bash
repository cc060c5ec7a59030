# SPDX-License-Identifier: MIT
# bash completion for sigil(1). Each command's options come from its own
# --help, so this file stays right when options are added; key labels come
# from the running daemon (`sigil list --json`) and are simply absent when it
# is unreachable.

_sigil_labels()
{
	local sock=$1
	sigil ${sock:+--socket "$sock"} --json list 2>/dev/null |
		grep -o '"label": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/'
}

_sigil()
{
	local cur prev cmd sock i w
	local commands='keygen import list pubkey delete sign verify dh lock unlock rekey export audit status ssh-cert help'
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}

	# Find the command and a --socket given before the cursor.
	cmd=
	sock=
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-s|--socket) sock=${COMP_WORDS[i+1]}; ((i++)) ;;
		--timeout) ((i++)) ;;
		--socket=*) sock=${w#--socket=} ;;
		-*) ;;
		*) if [[ -z $cmd ]]; then cmd=$w; fi ;;
		esac
	done

	case $prev in
	-s|--socket|-o|--output|-p|--pubkey|-x|--signature|--peer-file|--passphrase-file|--new-master-key-file)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		return
		;;
	-k|--key|--ca)
		COMPREPLY=($(compgen -W "$(_sigil_labels "$sock")" -- "$cur"))
		return
		;;
	--type)
		COMPREPLY=($(compgen -W 'ed25519 x25519' -- "$cur"))
		return
		;;
	--format)
		case $cmd in
		pubkey) COMPREPLY=($(compgen -W 'openssh allowed-signers minisign signify raw hex base64 age age-identity' -- "$cur")) ;;
		import) COMPREPLY=($(compgen -W 'auto hex raw openssh minisign signify age' -- "$cur")) ;;
		verify) COMPREPLY=($(compgen -W 'auto sshsig minisign signify raw hex base64' -- "$cur")) ;;
		*) COMPREPLY=($(compgen -W 'sshsig minisign signify raw hex base64' -- "$cur")) ;;
		esac
		return
		;;
	--mode)
		COMPREPLY=($(compgen -W 'pure ctx ph' -- "$cur"))
		return
		;;
	--policy)
		COMPREPLY=($(compgen -W 'strict zip215' -- "$cur"))
		return
		;;
	-n|--namespace)
		[[ $cmd == ssh-cert ]] || COMPREPLY=($(compgen -W 'file' -- "$cur"))
		return
		;;
	-O|--option)
		COMPREPLY=($(compgen -W 'clear force-command= source-address= verify-required no-touch-required
			no-X11-forwarding no-agent-forwarding no-port-forwarding no-pty no-user-rc
			permit-X11-forwarding permit-agent-forwarding permit-port-forwarding permit-pty permit-user-rc
			critical: extension:' -- "$cur"))
		return
		;;
	--allow-op)
		COMPREPLY=($(compgen -W 'sign dh age-unwrap' -- "$cur"))
		return
		;;
	--allow-exe)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		return
		;;
	--timeout|--context|-t|--trusted-comment|-c|--comment|-I|--principal|--peer|--expires|--id|--principals|-V|--validity|-z|--serial|--allow-uid|--allow-gid|--max-signs|--rate|--lines|--to)
		return
		;;
	esac

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W '--socket --json --timeout --help --version' -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi
		return
	fi

	if [[ $cur == -* ]]; then
		local opts
		opts=$(sigil "$cmd" --help 2>&1 | grep -oE -- '(^|[ ,[])--?[A-Za-z][A-Za-z0-9-]*' |
			sed 's/^[ ,[]*//' | sort -u)
		COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
		return
	fi

	case $cmd in
	pubkey|delete|export)
		COMPREPLY=($(compgen -W "$(_sigil_labels "$sock")" -- "$cur"))
		;;
	help)
		COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		;;
	ssh-cert)
		COMPREPLY=($(compgen -f -X '!*.pub' -- "$cur") $(compgen -d -- "$cur"))
		compopt -o filenames 2>/dev/null
		;;
	sign|verify|import|dh)
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
		;;
	esac
}
complete -F _sigil sigil
