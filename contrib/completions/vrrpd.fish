# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_vrrpd_global_optspecs
    string join \n v/verbose q/quiet h/help V/version
end

function __fish_vrrpd_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_vrrpd_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_vrrpd_using_subcommand
    set -l cmd (__fish_vrrpd_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c vrrpd -n "__fish_vrrpd_needs_command" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -s V -l version -d 'Print version'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "run" -d 'Run the VRRP instances of a keepalived.conf, or those OpenShift runs on a node'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "render" -d 'Print, as keepalived.conf, the configuration `run` would use'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "check-config" -d 'Check a keepalived.conf: exit 0 if it is valid, 2 with every error otherwise; warnings (what vrrpd accepts and leaves aside: LVS, SMTP, DBus, SNMP, ...) go to stderr either way'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "vrid" -d 'Print the API and Ingress VRRP router ids OpenShift derives from a cluster name'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "status" -d 'Show every running instance: state, priorities, master, scripts, counters'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "watch" -d 'Print every VRRP advertisement seen on an interface or in a capture file'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "survey" -d 'Listen for a while and list the VRIDs in use with their routers; with --cluster-name, say whether the API and Ingress VRIDs OpenShift derives from that name are free (exit 0) or taken (exit 1, with close names whose pair is free). Only multicast adverts can be heard: routers advertising by unicast to others are invisible'
complete -c vrrpd -n "__fish_vrrpd_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -s f -l config -d 'A keepalived.conf (`-` for standard input)' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l role -d 'This node\'s role' -r -f -a "bootstrap\t'The temporary node that holds the API until the control plane is up'
master\t'A control-plane node (`master` or `control-plane` in Kubernetes labels)'
worker\t'A compute node; runs the Ingress routers'"
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l interface -d 'The interface that holds the VIPs (the pool mode: one the L2Advertisement names; by default the first of those that exists here)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l nodes -d 'The node inventory (ipi-nodes(5)): unicast peers and VIP checks; the pool mode\'s nodes' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l scripts-dir -d 'Track scripts from this directory (chk_ocp_script.sh, chk_ocp_script_both.sh, chk_ingress.sh: ipi-net\'s contrib/keepalived, on `lb-proxy check`) instead of /etc/keepalived\'s and curl' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l script-user -d 'Who the track scripts run as (global_defs\' script_user, USER or USER:GROUP). By default the first of the users keepalived_script and ipi-net-script that exists, else vrrpd\'s own; OpenShift\'s templates say root' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -s i -l config-id -d 'The configuration id that the file\'s `@ID` and `@^ID` lines are compared with (keepalived\'s -i; default: the host name up to its first dot)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l pool -d 'Pool mode: hold every address reserved from this MetalLB IPAddressPool in ipam\'s store, each a VRRP v3 instance (0.1 s adverts) unicast among the nodes of --nodes that the L2Advertisement selects, led by the node rendezvous hashing picks' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l l2advertisement -d 'Pool mode: the L2Advertisement (ipAddressPools, ipAddressPoolSelectors, nodeSelectors matched on the inventory\'s names and roles, interfaces)' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l store -d 'Pool mode: ipam\'s store (a directory, or etcd://HOST:PORT[,HOST:PORT...][/PREFIX]), followed live: a reservation made or released is held or let go within a second' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l node -d 'Pool mode: this node\'s name in --nodes (default: the host name up to its first dot)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l pool-cluster -d 'Pool mode: the cluster\'s install-config.yaml, whose API and Ingress VRIDs the pool\'s instances avoid and whose VIPs the pool must not hold' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l state-dir -d 'Where one state file per instance (MASTER, BACKUP or FAULT) is written' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l metrics -d 'Serve Prometheus metrics at http://ADDR:PORT/metrics (a loopback address unless --metrics-allow-remote; the endpoint has no authentication)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l probe-timing -d 'How each instance\'s VIPs are probed on the wire when it starts and when a foreign router appears on its VRID (RFC 5227 ARP probes from 0.0.0.0, RFC 4862 solicitations from ::): `fast` (3 probes, under 0.7 s), `rfc5227` (up to 7 s) or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS. A VIP that a host outside the group answers for is a warning, in `vrrpd status` and the metrics; the instance runs on' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l unicast -d 'Send adverts to the other nodes (from --nodes) instead of multicast'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l metrics-allow-remote -d 'Let --metrics listen on an address other than loopback'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -l no-probe -d 'Never probe the VIPs'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -s f -l config -d 'A keepalived.conf (`-` for standard input)' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l role -d 'This node\'s role' -r -f -a "bootstrap\t'The temporary node that holds the API until the control plane is up'
master\t'A control-plane node (`master` or `control-plane` in Kubernetes labels)'
worker\t'A compute node; runs the Ingress routers'"
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l interface -d 'The interface that holds the VIPs (the pool mode: one the L2Advertisement names; by default the first of those that exists here)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l nodes -d 'The node inventory (ipi-nodes(5)): unicast peers and VIP checks; the pool mode\'s nodes' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l scripts-dir -d 'Track scripts from this directory (chk_ocp_script.sh, chk_ocp_script_both.sh, chk_ingress.sh: ipi-net\'s contrib/keepalived, on `lb-proxy check`) instead of /etc/keepalived\'s and curl' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l script-user -d 'Who the track scripts run as (global_defs\' script_user, USER or USER:GROUP). By default the first of the users keepalived_script and ipi-net-script that exists, else vrrpd\'s own; OpenShift\'s templates say root' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -s i -l config-id -d 'The configuration id that the file\'s `@ID` and `@^ID` lines are compared with (keepalived\'s -i; default: the host name up to its first dot)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l pool -d 'Pool mode: hold every address reserved from this MetalLB IPAddressPool in ipam\'s store, each a VRRP v3 instance (0.1 s adverts) unicast among the nodes of --nodes that the L2Advertisement selects, led by the node rendezvous hashing picks' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l l2advertisement -d 'Pool mode: the L2Advertisement (ipAddressPools, ipAddressPoolSelectors, nodeSelectors matched on the inventory\'s names and roles, interfaces)' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l store -d 'Pool mode: ipam\'s store (a directory, or etcd://HOST:PORT[,HOST:PORT...][/PREFIX]), followed live: a reservation made or released is held or let go within a second' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l node -d 'Pool mode: this node\'s name in --nodes (default: the host name up to its first dot)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l pool-cluster -d 'Pool mode: the cluster\'s install-config.yaml, whose API and Ingress VRIDs the pool\'s instances avoid and whose VIPs the pool must not hold' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -l unicast -d 'Send adverts to the other nodes (from --nodes) instead of multicast'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand render" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand check-config" -s f -l config -d 'The file to check (`-` for standard input)' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand check-config" -s i -l config-id -d 'The configuration id that the file\'s `@ID` and `@^ID` lines are compared with (keepalived\'s -i; default: the host name up to its first dot)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand check-config" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand check-config" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand check-config" -s h -l help -d 'Print help'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand vrid" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand vrid" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand vrid" -s h -l help -d 'Print help'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand status" -l state-dir -d 'The state directory of the vrrpd to ask' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand status" -l json -d 'Print JSON instead of text'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand status" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand status" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand status" -s h -l help -d 'Print help'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -l interface -d 'Listen on this interface (IPv4 and IPv6, VRRPv2 and v3)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -l pcap -d 'Read this pcap file instead' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -s f -l config -d 'Mark adverts on this keepalived.conf\'s VRIDs that come from routers outside its groups (other addresses, authentication or version; not a listed unicast peer)' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -l json -d 'One JSON object per line instead of text'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -l show-secrets -d 'Print PASS passwords as they are on the wire (without it: `<redacted>`)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand watch" -s h -l help -d 'Print help'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -l interface -d 'Listen on this interface (IPv4 and IPv6, VRRPv2 and v3)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -l pcap -d 'Read this pcap file instead' -r -F
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -l for -d 'How long to listen: 5s, 500ms, 1.5s, 1m, 1h (a bare number is seconds; at least three advert intervals: OpenShift\'s are 1 s)' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -l cluster-name -d 'The cluster name (metadata.name of install-config.yaml) whose VRIDs to check' -r
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -l json -d 'Print JSON instead of text'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -s v -l verbose -d 'More log output (repeat for more)'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -s q -l quiet -d 'Less log output'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand survey" -s h -l help -d 'Print help'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "run" -d 'Run the VRRP instances of a keepalived.conf, or those OpenShift runs on a node'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "render" -d 'Print, as keepalived.conf, the configuration `run` would use'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "check-config" -d 'Check a keepalived.conf: exit 0 if it is valid, 2 with every error otherwise; warnings (what vrrpd accepts and leaves aside: LVS, SMTP, DBus, SNMP, ...) go to stderr either way'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "vrid" -d 'Print the API and Ingress VRRP router ids OpenShift derives from a cluster name'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "status" -d 'Show every running instance: state, priorities, master, scripts, counters'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "watch" -d 'Print every VRRP advertisement seen on an interface or in a capture file'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "survey" -d 'Listen for a while and list the VRIDs in use with their routers; with --cluster-name, say whether the API and Ingress VRIDs OpenShift derives from that name are free (exit 0) or taken (exit 1, with close names whose pair is free). Only multicast adverts can be heard: routers advertising by unicast to others are invisible'
complete -c vrrpd -n "__fish_vrrpd_using_subcommand help; and not __fish_seen_subcommand_from run render check-config vrid status watch survey help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
