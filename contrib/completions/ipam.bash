_ipam() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="ipam"
                ;;
            ipam,cni)
                cmd="ipam__subcmd__cni"
                ;;
            ipam,gc)
                cmd="ipam__subcmd__gc"
                ;;
            ipam,help)
                cmd="ipam__subcmd__help"
                ;;
            ipam,list)
                cmd="ipam__subcmd__list"
                ;;
            ipam,netconfig)
                cmd="ipam__subcmd__netconfig"
                ;;
            ipam,pool)
                cmd="ipam__subcmd__pool"
                ;;
            ipam,release)
                cmd="ipam__subcmd__release"
                ;;
            ipam,reserve)
                cmd="ipam__subcmd__reserve"
                ;;
            ipam,vip)
                cmd="ipam__subcmd__vip"
                ;;
            ipam__subcmd__help,cni)
                cmd="ipam__subcmd__help__subcmd__cni"
                ;;
            ipam__subcmd__help,gc)
                cmd="ipam__subcmd__help__subcmd__gc"
                ;;
            ipam__subcmd__help,help)
                cmd="ipam__subcmd__help__subcmd__help"
                ;;
            ipam__subcmd__help,list)
                cmd="ipam__subcmd__help__subcmd__list"
                ;;
            ipam__subcmd__help,netconfig)
                cmd="ipam__subcmd__help__subcmd__netconfig"
                ;;
            ipam__subcmd__help,pool)
                cmd="ipam__subcmd__help__subcmd__pool"
                ;;
            ipam__subcmd__help,release)
                cmd="ipam__subcmd__help__subcmd__release"
                ;;
            ipam__subcmd__help,reserve)
                cmd="ipam__subcmd__help__subcmd__reserve"
                ;;
            ipam__subcmd__help,vip)
                cmd="ipam__subcmd__help__subcmd__vip"
                ;;
            ipam__subcmd__help__subcmd__netconfig,validate)
                cmd="ipam__subcmd__help__subcmd__netconfig__subcmd__validate"
                ;;
            ipam__subcmd__help__subcmd__pool,reserve)
                cmd="ipam__subcmd__help__subcmd__pool__subcmd__reserve"
                ;;
            ipam__subcmd__help__subcmd__vip,suggest)
                cmd="ipam__subcmd__help__subcmd__vip__subcmd__suggest"
                ;;
            ipam__subcmd__help__subcmd__vip,validate)
                cmd="ipam__subcmd__help__subcmd__vip__subcmd__validate"
                ;;
            ipam__subcmd__netconfig,help)
                cmd="ipam__subcmd__netconfig__subcmd__help"
                ;;
            ipam__subcmd__netconfig,validate)
                cmd="ipam__subcmd__netconfig__subcmd__validate"
                ;;
            ipam__subcmd__netconfig__subcmd__help,help)
                cmd="ipam__subcmd__netconfig__subcmd__help__subcmd__help"
                ;;
            ipam__subcmd__netconfig__subcmd__help,validate)
                cmd="ipam__subcmd__netconfig__subcmd__help__subcmd__validate"
                ;;
            ipam__subcmd__pool,help)
                cmd="ipam__subcmd__pool__subcmd__help"
                ;;
            ipam__subcmd__pool,reserve)
                cmd="ipam__subcmd__pool__subcmd__reserve"
                ;;
            ipam__subcmd__pool__subcmd__help,help)
                cmd="ipam__subcmd__pool__subcmd__help__subcmd__help"
                ;;
            ipam__subcmd__pool__subcmd__help,reserve)
                cmd="ipam__subcmd__pool__subcmd__help__subcmd__reserve"
                ;;
            ipam__subcmd__vip,help)
                cmd="ipam__subcmd__vip__subcmd__help"
                ;;
            ipam__subcmd__vip,suggest)
                cmd="ipam__subcmd__vip__subcmd__suggest"
                ;;
            ipam__subcmd__vip,validate)
                cmd="ipam__subcmd__vip__subcmd__validate"
                ;;
            ipam__subcmd__vip__subcmd__help,help)
                cmd="ipam__subcmd__vip__subcmd__help__subcmd__help"
                ;;
            ipam__subcmd__vip__subcmd__help,suggest)
                cmd="ipam__subcmd__vip__subcmd__help__subcmd__suggest"
                ;;
            ipam__subcmd__vip__subcmd__help,validate)
                cmd="ipam__subcmd__vip__subcmd__help__subcmd__validate"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        ipam)
            opts="-h -V --help --version vip netconfig reserve release list gc pool cni help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__cni)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__gc)
            opts="-h --config --keep --node --free --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --node)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help)
            opts="vip netconfig reserve release list gc pool cni help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__cni)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__gc)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__list)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__netconfig)
            opts="validate"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__netconfig__subcmd__validate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__pool)
            opts="reserve"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__pool__subcmd__reserve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__release)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__reserve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__vip)
            opts="validate suggest"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__vip__subcmd__suggest)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__help__subcmd__vip__subcmd__validate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__list)
            opts="-h --store --etcd-cacert --etcd-cert --etcd-key --etcd-user --etcd-password-file --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__netconfig)
            opts="-h --help validate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__netconfig__subcmd__help)
            opts="validate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__netconfig__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__netconfig__subcmd__help__subcmd__validate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__netconfig__subcmd__validate)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__pool)
            opts="-h --help reserve help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__pool__subcmd__help)
            opts="reserve help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__pool__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__pool__subcmd__help__subcmd__reserve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__pool__subcmd__reserve)
            opts="-h --pool --name --sharing-key --store --etcd-cacert --etcd-cert --etcd-key --etcd-user --etcd-password-file --probe --probe-timing --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --pool)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sharing-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__release)
            opts="-h --store --etcd-cacert --etcd-cert --etcd-key --etcd-user --etcd-password-file --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__reserve)
            opts="-h --netconfig --ipset --store --etcd-cacert --etcd-cert --etcd-key --etcd-user --etcd-password-file --probe --probe-timing --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --netconfig)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ipset)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip)
            opts="-h --help validate suggest help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip__subcmd__help)
            opts="validate suggest help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip__subcmd__help__subcmd__suggest)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip__subcmd__help__subcmd__validate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip__subcmd__suggest)
            opts="-h --cluster --nodes --store --etcd-cacert --etcd-cert --etcd-key --etcd-user --etcd-password-file --probe --probe-timing --json --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cluster)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-password-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        ipam__subcmd__vip__subcmd__validate)
            opts="-h --cluster --nodes --probe --probe-timing --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cluster)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nodes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --probe-timing)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _ipam -o nosort -o bashdefault -o default ipam
else
    complete -F _ipam -o bashdefault -o default ipam
fi
