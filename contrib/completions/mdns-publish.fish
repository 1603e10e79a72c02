# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_mdns_publish_global_optspecs
    string join \n h/help V/version
end

function __fish_mdns_publish_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_mdns_publish_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_mdns_publish_using_subcommand
    set -l cmd (__fish_mdns_publish_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c mdns-publish -n "__fish_mdns_publish_needs_command" -s h -l help -d 'Print help'
complete -c mdns-publish -n "__fish_mdns_publish_needs_command" -s V -l version -d 'Print version'
complete -c mdns-publish -n "__fish_mdns_publish_needs_command" -f -a "run" -d 'Publish this node: from an mdns-publisher config (-f), or what OpenShift publishes for a node of the cluster (--cluster). SIGTERM sends goodbyes and exits 0; a name another host owns exits 1 (never a silent rename)'
complete -c mdns-publish -n "__fish_mdns_publish_needs_command" -f -a "browse" -d 'Ask the link who is there and print the node inventory (ipi-nodes(5)); exit 0 when something was found, 1 when nothing was'
complete -c mdns-publish -n "__fish_mdns_publish_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -s f -l config -d 'An mdns-publisher config file, YAML or JSON (mdns-publish.conf(5))' -r -F
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -l hostname -d 'This node\'s host name (with --cluster)' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -l role -d 'This node\'s role (with --cluster)' -r -f -a "bootstrap\t'The temporary node that holds the API until the control plane is up'
master\t'A control-plane node (`master` or `control-plane` in Kubernetes labels)'
worker\t'A compute node; runs the Ingress routers'"
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -l bind -d 'The address whose interface is published (with --cluster; the config\'s bind_address otherwise)' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -l on-conflict -d 'What to do when another host owns one of our names' -r -f -a "exit\t'Log it and exit with status 1'
wait\t'Log it, wait ten seconds and probe again, until the name is free'"
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -l cluster-key -d 'Sign what is published with the cluster key in this file (default: /etc/ipi-net/cluster.key when the node has it)' -r -F
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -s v -l verbose -d 'More log lines (-v debug, -vv trace)'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -s q -l quiet -d 'Warnings and errors only'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l type -d 'The service type whose instances are nodes' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l filter -d 'Keep only instances whose name contains this (the cluster name)' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l min-srv -d 'Withhold the etcd SRV targets until at least this many are seen' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l timeout -d 'How long to listen for answers (with --watch: one round of one-shot queries, or with --bind the time to the first inventory and between two writes of --metrics)' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -s o -l output -d 'Write the inventory to this file, atomically, rather than to standard output' -r -F
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l bind -d 'The address to query from (its interface; default: any)' -r
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l cluster-key -d 'Take only nodes signed with the cluster key in this file, and of each only its signed addresses (default: /etc/ipi-net/cluster.key when the node has it)' -r -F
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l metrics -d 'After each round, write what the rounds held and refused to this file, atomically, in Prometheus\' text format (node_exporter\'s textfile collector): the inventory\'s nodes, the nodes left out, and the responses and records refused by why (off the link, not the name\'s owner, the cache full, past a round\'s cap)' -r -F
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l json -d 'The inventory as JSON (with the etcd targets)'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -l watch -d 'Keep browsing; rewrite the output only when the inventory changes (tells systemd it is ready once the first inventory is written, a --timeout after the start). With --bind, continuous multicast querying from port 5353 (RFC 6762 5.2): answers are multicast and shared by every browser, each node is refreshed by the node before it in address order about every 4 s, and a node that died without a goodbye leaves within 8 s (two questions for it unanswered for a second, or 8 s without an answer). Without --bind, rounds of one-shot queries, each answer held for its TTL (10 s, RFC 6762 6.7)'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand browse" -s h -l help -d 'Print help'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand help; and not __fish_seen_subcommand_from run browse help" -f -a "run" -d 'Publish this node: from an mdns-publisher config (-f), or what OpenShift publishes for a node of the cluster (--cluster). SIGTERM sends goodbyes and exits 0; a name another host owns exits 1 (never a silent rename)'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand help; and not __fish_seen_subcommand_from run browse help" -f -a "browse" -d 'Ask the link who is there and print the node inventory (ipi-nodes(5)); exit 0 when something was found, 1 when nothing was'
complete -c mdns-publish -n "__fish_mdns_publish_using_subcommand help; and not __fish_seen_subcommand_from run browse help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
