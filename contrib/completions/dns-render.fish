# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_dns_render_global_optspecs
    string join \n h/help V/version
end

function __fish_dns_render_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_dns_render_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_dns_render_using_subcommand
    set -l cmd (__fish_dns_render_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c dns-render -n "__fish_dns_render_needs_command" -s h -l help -d 'Print help'
complete -c dns-render -n "__fish_dns_render_needs_command" -s V -l version -d 'Print version'
complete -c dns-render -n "__fish_dns_render_needs_command" -f -a "corefile" -d 'A Corefile for CoreDNS, as OpenShift renders it'
complete -c dns-render -n "__fish_dns_render_needs_command" -f -a "dnsmasq" -d 'DIR/dnsmasq.conf and the DIR/hosts and DIR/servers files it names. `dnsmasq --conf-file=DIR/dnsmasq.conf` serves the cluster'
complete -c dns-render -n "__fish_dns_render_needs_command" -f -a "hosts" -d 'An /etc/hosts fragment: api and api-int, and every node'
complete -c dns-render -n "__fish_dns_render_needs_command" -f -a "dnsdata" -d 'The infra-operator\'s DNSData in, a hosts file out (`IP name...`, sorted)'
complete -c dns-render -n "__fish_dns_render_needs_command" -f -a "resolv" -d 'resolv.conf with this node\'s DNS server first (the resolv-prepender), or with --resolved a systemd-resolved drop-in'
complete -c dns-render -n "__fish_dns_render_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l nodes -d 'The node inventory (ipi-nodes(5): kubectl JSON, mdns-publish browse, or by hand)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l templates -d 'Templates that replace the built-in ones, by file name (Corefile, dnsmasq.conf, hosts, servers)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l resolv -d 'resolv.conf with the upstream servers (NetworkManager\'s)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l node-ip -d 'This node\'s addresses, left out of the upstreams (repeatable; default: the addresses of this host\'s interfaces)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -s o -l output -d 'Write here (atomically) rather than to standard output' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l reload-pid -d 'After writing an output that changed, send SIGHUP to the process whose id FILE holds (repeatable; dnsmasq\'s --pid-file): dnsmasq reads the hosts and servers files again with no restart. A pid file or process that is not there is logged and skipped' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l reload-name -d 'The name of the program the --reload-pid files name (/proc/PID/comm, its first 15 characters): a pid whose process is another program, or none, is logged and not signalled (a stale pid file)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l exit-changed -d 'Exit 0 only when the output changed, 1 when it was already so: `dns-render ... -o F --exit-changed && systemctl reload coredns` (without it: 0 on success)'
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -l watch -d 'Keep running: render again whenever an input file changes (errors are logged and the previous output kept)'
complete -c dns-render -n "__fish_dns_render_using_subcommand corefile" -s h -l help -d 'Print help'
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l nodes -d 'The node inventory (ipi-nodes(5): kubectl JSON, mdns-publish browse, or by hand)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l templates -d 'Templates that replace the built-in ones, by file name (Corefile, dnsmasq.conf, hosts, servers)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l resolv -d 'resolv.conf with the upstream servers (NetworkManager\'s)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l node-ip -d 'This node\'s addresses, left out of the upstreams (repeatable; default: the addresses of this host\'s interfaces)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l out-dir -d 'Where the three files go' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l listen -d 'Addresses dnsmasq listens on (repeatable; default: dnsmasq\'s own)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l reload-pid -d 'After writing an output that changed, send SIGHUP to the process whose id FILE holds (repeatable; dnsmasq\'s --pid-file): dnsmasq reads the hosts and servers files again with no restart. A pid file or process that is not there is logged and skipped' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l reload-name -d 'The name of the program the --reload-pid files name (/proc/PID/comm, its first 15 characters): a pid whose process is another program, or none, is logged and not signalled (a stale pid file)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l exit-changed -d 'Exit 0 only when the output changed, 1 when it was already so: `dns-render ... -o F --exit-changed && systemctl reload coredns` (without it: 0 on success)'
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -l watch -d 'Keep running: render again whenever an input file changes (errors are logged and the previous output kept)'
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsmasq" -s h -l help -d 'Print help'
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l nodes -d 'The node inventory (ipi-nodes(5): kubectl JSON, mdns-publish browse, or by hand)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l templates -d 'Templates that replace the built-in ones, by file name (Corefile, dnsmasq.conf, hosts, servers)' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -s o -l output -d 'Write here (atomically) rather than to standard output' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l reload-pid -d 'After writing an output that changed, send SIGHUP to the process whose id FILE holds (repeatable; dnsmasq\'s --pid-file): dnsmasq reads the hosts and servers files again with no restart. A pid file or process that is not there is logged and skipped' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l reload-name -d 'The name of the program the --reload-pid files name (/proc/PID/comm, its first 15 characters): a pid whose process is another program, or none, is logged and not signalled (a stale pid file)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l exit-changed -d 'Exit 0 only when the output changed, 1 when it was already so: `dns-render ... -o F --exit-changed && systemctl reload coredns` (without it: 0 on success)'
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -l watch -d 'Keep running: render again whenever an input file changes (errors are logged and the previous output kept)'
complete -c dns-render -n "__fish_dns_render_using_subcommand hosts" -s h -l help -d 'Print help'
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsdata" -s o -l output -d 'Write here (atomically) rather than to standard output' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsdata" -l reload-pid -d 'After writing an output that changed, send SIGHUP to the process whose id FILE holds (repeatable; dnsmasq\'s --pid-file): dnsmasq reads the hosts and servers files again with no restart. A pid file or process that is not there is logged and skipped' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsdata" -l reload-name -d 'The name of the program the --reload-pid files name (/proc/PID/comm, its first 15 characters): a pid whose process is another program, or none, is logged and not signalled (a stale pid file)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsdata" -l exit-changed -d 'Exit 0 only when the output changed, 1 when it was already so: `dns-render ... -o F --exit-changed && systemctl reload coredns` (without it: 0 on success)'
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsdata" -l watch -d 'Keep running: render again whenever an input file changes (errors are logged and the previous output kept)'
complete -c dns-render -n "__fish_dns_render_using_subcommand dnsdata" -s h -l help -d 'Print help'
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l nameserver -d 'This node\'s DNS server' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l search -d 'The cluster domain, put first in the search list' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l in -d 'NetworkManager\'s resolv.conf' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -s o -l output -d 'Write here (atomically) rather than to standard output' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l reload-pid -d 'After writing an output that changed, send SIGHUP to the process whose id FILE holds (repeatable; dnsmasq\'s --pid-file): dnsmasq reads the hosts and servers files again with no restart. A pid file or process that is not there is logged and skipped' -r -F
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l reload-name -d 'The name of the program the --reload-pid files name (/proc/PID/comm, its first 15 characters): a pid whose process is another program, or none, is logged and not signalled (a stale pid file)' -r
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l resolved -d 'Write a systemd-resolved drop-in instead'
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l exit-changed -d 'Exit 0 only when the output changed, 1 when it was already so: `dns-render ... -o F --exit-changed && systemctl reload coredns` (without it: 0 on success)'
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -l watch -d 'Keep running: render again whenever an input file changes (errors are logged and the previous output kept)'
complete -c dns-render -n "__fish_dns_render_using_subcommand resolv" -s h -l help -d 'Print help'
complete -c dns-render -n "__fish_dns_render_using_subcommand help; and not __fish_seen_subcommand_from corefile dnsmasq hosts dnsdata resolv help" -f -a "corefile" -d 'A Corefile for CoreDNS, as OpenShift renders it'
complete -c dns-render -n "__fish_dns_render_using_subcommand help; and not __fish_seen_subcommand_from corefile dnsmasq hosts dnsdata resolv help" -f -a "dnsmasq" -d 'DIR/dnsmasq.conf and the DIR/hosts and DIR/servers files it names. `dnsmasq --conf-file=DIR/dnsmasq.conf` serves the cluster'
complete -c dns-render -n "__fish_dns_render_using_subcommand help; and not __fish_seen_subcommand_from corefile dnsmasq hosts dnsdata resolv help" -f -a "hosts" -d 'An /etc/hosts fragment: api and api-int, and every node'
complete -c dns-render -n "__fish_dns_render_using_subcommand help; and not __fish_seen_subcommand_from corefile dnsmasq hosts dnsdata resolv help" -f -a "dnsdata" -d 'The infra-operator\'s DNSData in, a hosts file out (`IP name...`, sorted)'
complete -c dns-render -n "__fish_dns_render_using_subcommand help; and not __fish_seen_subcommand_from corefile dnsmasq hosts dnsdata resolv help" -f -a "resolv" -d 'resolv.conf with this node\'s DNS server first (the resolv-prepender), or with --resolved a systemd-resolved drop-in'
complete -c dns-render -n "__fish_dns_render_using_subcommand help; and not __fish_seen_subcommand_from corefile dnsmasq hosts dnsdata resolv help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
