# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ipam_global_optspecs
    string join \n h/help V/version
end

function __fish_ipam_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ipam_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ipam_using_subcommand
    set -l cmd (__fish_ipam_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ipam -n "__fish_ipam_needs_command" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_needs_command" -s V -l version -d 'Print version'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "vip" -d 'The cluster\'s VIPs'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "netconfig" -d 'NetConfig files (network.openstack.org/v1beta1): the networks reservations come from'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "reserve" -d 'Reserve an address on every network an IPSet asks for; print its status.reservations. The same IPSet again gets the same answer'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "release" -d 'Release every address reserved for NAME (an IPSet, or a pool request), in every pool; `answered/ADDRESS` frees an address that `--probe` found in use on the wire'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "list" -d 'List every reservation in the store, by pool and address'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "gc" -d 'What a CNI network holds that this node\'s runtime no longer does: every reservation of the network and what its runtime\'s GC makes of it (leaked: this node\'s, not attached, older than the network\'s gc_grace; else kept, and why). Nothing is freed without --free'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "pool" -d 'MetalLB address pools'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "cni" -d 'Act as a CNI IPAM plugin: CNI_COMMAND (ADD, DEL, CHECK, VERSION, GC), CNI_CONTAINERID, CNI_IFNAME and CNI_ARGS from the environment, the network config on stdin, the result or a CNI error object on stdout (exit 1 on error). Plain `ipam` does the same whenever CNI_COMMAND is set, so `"type": "ipam"` finds it on the CNI path'
complete -c ipam -n "__fish_ipam_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and not __fish_seen_subcommand_from validate suggest help" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and not __fish_seen_subcommand_from validate suggest help" -f -a "validate" -d 'Check the VIPs with the installer\'s rules (and ours: not a network or broadcast address, not a node\'s address; with --probe, not answered on the wire); list every problem in the installer\'s words and exit 1 if any'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and not __fish_seen_subcommand_from validate suggest help" -f -a "suggest" -d 'Suggest VIPs as OpenStack\'s installer does: hosts 5 (API) and 7 (Ingress) of the first machine network of each family, moving on to the next free address when one is a node\'s, reserved in the store or (with --probe) answered on the wire'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and not __fish_seen_subcommand_from validate suggest help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from validate" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from validate" -l nodes -d 'The node inventory (ipi-nodes(5)): a VIP must not be a node\'s address' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from validate" -l probe -d 'Probe each address on interface IF first (RFC 5227 ARP probes from 0.0.0.0 for IPv4, RFC 4862 duplicate address detection from :: for IPv6); needs CAP_NET_RAW' -r
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from validate" -l probe-timing -d 'The probes\' pace: `fast` (3 probes, under 0.7 s), `rfc5227` (RFC 5227\'s constants, up to 7 s) or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS' -r
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from validate" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l nodes -d 'The node inventory (ipi-nodes(5)): a VIP must not be a node\'s address' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l store -d 'A store whose reservations the VIPs must avoid' -r
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l etcd-cacert -d 'The CA bundle (PEM) that signed etcd\'s server certificate: etcd+https:// needs it' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l etcd-cert -d 'The client certificate (PEM) for an etcd that asks for one (--client-cert-auth), with --etcd-key' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l etcd-key -d 'The client certificate\'s private key (PEM)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l etcd-user -d 'The etcd user (etcd\'s authentication), with --etcd-password-file' -r
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l etcd-password-file -d 'A file holding the user\'s password (a final newline is not part of it). Only over etcd+https://' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l probe -d 'Probe each address on interface IF first (RFC 5227 ARP probes from 0.0.0.0 for IPv4, RFC 4862 duplicate address detection from :: for IPv6); needs CAP_NET_RAW' -r
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l probe-timing -d 'The probes\' pace: `fast` (3 probes, under 0.7 s), `rfc5227` (RFC 5227\'s constants, up to 7 s) or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS' -r
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -l json -d 'JSON rather than install-config YAML'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from suggest" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from help" -f -a "validate" -d 'Check the VIPs with the installer\'s rules (and ours: not a network or broadcast address, not a node\'s address; with --probe, not answered on the wire); list every problem in the installer\'s words and exit 1 if any'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from help" -f -a "suggest" -d 'Suggest VIPs as OpenStack\'s installer does: hosts 5 (API) and 7 (Ingress) of the first machine network of each family, moving on to the next free address when one is a node\'s, reserved in the store or (with --probe) answered on the wire'
complete -c ipam -n "__fish_ipam_using_subcommand vip; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand netconfig; and not __fish_seen_subcommand_from validate help" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand netconfig; and not __fish_seen_subcommand_from validate help" -f -a "validate" -d 'Check a NetConfig with the infra-operator\'s rules and ours (no overlapping cidrs or ranges); list every problem and exit 1 if any'
complete -c ipam -n "__fish_ipam_using_subcommand netconfig; and not __fish_seen_subcommand_from validate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand netconfig; and __fish_seen_subcommand_from validate" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand netconfig; and __fish_seen_subcommand_from help" -f -a "validate" -d 'Check a NetConfig with the infra-operator\'s rules and ours (no overlapping cidrs or ranges); list every problem and exit 1 if any'
complete -c ipam -n "__fish_ipam_using_subcommand netconfig; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l netconfig -d 'The NetConfig' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l ipset -d 'The IPSet (its spec.networks; a status in it is ignored)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l store -d 'The store: a directory (or file://DIR) for one machine, etcd://HOST:PORT[,HOST:PORT...] or, over TLS, etcd+https://HOST:PORT[,HOST:PORT...] for many (a /PREFIX may follow)' -r
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l etcd-cacert -d 'The CA bundle (PEM) that signed etcd\'s server certificate: etcd+https:// needs it' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l etcd-cert -d 'The client certificate (PEM) for an etcd that asks for one (--client-cert-auth), with --etcd-key' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l etcd-key -d 'The client certificate\'s private key (PEM)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l etcd-user -d 'The etcd user (etcd\'s authentication), with --etcd-password-file' -r
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l etcd-password-file -d 'A file holding the user\'s password (a final newline is not part of it). Only over etcd+https://' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l probe -d 'Probe each address on interface IF first (RFC 5227 ARP probes from 0.0.0.0 for IPv4, RFC 4862 duplicate address detection from :: for IPv6); needs CAP_NET_RAW' -r
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l probe-timing -d 'The probes\' pace: `fast` (3 probes, under 0.7 s), `rfc5227` (RFC 5227\'s constants, up to 7 s) or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS' -r
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -l json -d 'JSON rather than YAML'
complete -c ipam -n "__fish_ipam_using_subcommand reserve" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand release" -l store -d 'The store: a directory (or file://DIR) for one machine, etcd://HOST:PORT[,HOST:PORT...] or, over TLS, etcd+https://HOST:PORT[,HOST:PORT...] for many (a /PREFIX may follow)' -r
complete -c ipam -n "__fish_ipam_using_subcommand release" -l etcd-cacert -d 'The CA bundle (PEM) that signed etcd\'s server certificate: etcd+https:// needs it' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand release" -l etcd-cert -d 'The client certificate (PEM) for an etcd that asks for one (--client-cert-auth), with --etcd-key' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand release" -l etcd-key -d 'The client certificate\'s private key (PEM)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand release" -l etcd-user -d 'The etcd user (etcd\'s authentication), with --etcd-password-file' -r
complete -c ipam -n "__fish_ipam_using_subcommand release" -l etcd-password-file -d 'A file holding the user\'s password (a final newline is not part of it). Only over etcd+https://' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand release" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand list" -l store -d 'The store: a directory (or file://DIR) for one machine, etcd://HOST:PORT[,HOST:PORT...] or, over TLS, etcd+https://HOST:PORT[,HOST:PORT...] for many (a /PREFIX may follow)' -r
complete -c ipam -n "__fish_ipam_using_subcommand list" -l etcd-cacert -d 'The CA bundle (PEM) that signed etcd\'s server certificate: etcd+https:// needs it' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand list" -l etcd-cert -d 'The client certificate (PEM) for an etcd that asks for one (--client-cert-auth), with --etcd-key' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand list" -l etcd-key -d 'The client certificate\'s private key (PEM)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand list" -l etcd-user -d 'The etcd user (etcd\'s authentication), with --etcd-password-file' -r
complete -c ipam -n "__fish_ipam_using_subcommand list" -l etcd-password-file -d 'A file holding the user\'s password (a final newline is not part of it). Only over etcd+https://' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand list" -l json -d 'JSON rather than text'
complete -c ipam -n "__fish_ipam_using_subcommand list" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand gc" -l config -d 'The network config, as the runtime gives it to the plugin (a NetworkAttachmentDefinition\'s config), or the runtime\'s conflist (podman\'s, /etc/cni/net.d\'s) holding one plugin with an ipam section: that section names the ranges and the store' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand gc" -l keep -d 'The attachments the runtime holds, one CONTAINERID/IFNAME a line (as `ipam list` names their owners; blank lines and # comments skipped); - for stdin' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand gc" -l node -d 'This node\'s name, as its ADDs recorded it (default: the host name)' -r
complete -c ipam -n "__fish_ipam_using_subcommand gc" -l free -d 'Free the leaked ones, as the runtime\'s GC would'
complete -c ipam -n "__fish_ipam_using_subcommand gc" -l json -d 'JSON rather than text'
complete -c ipam -n "__fish_ipam_using_subcommand gc" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and not __fish_seen_subcommand_from reserve help" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and not __fish_seen_subcommand_from reserve help" -f -a "reserve" -d 'Reserve an address of a MetalLB IPAddressPool for NAME and print it; requests with the same sharing key share one address. The same NAME again gets the same answer'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and not __fish_seen_subcommand_from reserve help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l pool -d 'The IPAddressPool (metallb.io/v1beta1)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l name -d 'Who the address is for (a service, say)' -r
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l sharing-key -d 'Share one address among every request with this key' -r
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l store -d 'The store: a directory (or file://DIR) for one machine, etcd://HOST:PORT[,HOST:PORT...] or, over TLS, etcd+https://HOST:PORT[,HOST:PORT...] for many (a /PREFIX may follow)' -r
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l etcd-cacert -d 'The CA bundle (PEM) that signed etcd\'s server certificate: etcd+https:// needs it' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l etcd-cert -d 'The client certificate (PEM) for an etcd that asks for one (--client-cert-auth), with --etcd-key' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l etcd-key -d 'The client certificate\'s private key (PEM)' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l etcd-user -d 'The etcd user (etcd\'s authentication), with --etcd-password-file' -r
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l etcd-password-file -d 'A file holding the user\'s password (a final newline is not part of it). Only over etcd+https://' -r -F
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l probe -d 'Probe each address on interface IF first (RFC 5227 ARP probes from 0.0.0.0 for IPv4, RFC 4862 duplicate address detection from :: for IPv6); needs CAP_NET_RAW' -r
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l probe-timing -d 'The probes\' pace: `fast` (3 probes, under 0.7 s), `rfc5227` (RFC 5227\'s constants, up to 7 s) or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS' -r
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -l json -d 'JSON rather than text'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from reserve" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from help" -f -a "reserve" -d 'Reserve an address of a MetalLB IPAddressPool for NAME and print it; requests with the same sharing key share one address. The same NAME again gets the same answer'
complete -c ipam -n "__fish_ipam_using_subcommand pool; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand cni" -s h -l help -d 'Print help'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "vip" -d 'The cluster\'s VIPs'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "netconfig" -d 'NetConfig files (network.openstack.org/v1beta1): the networks reservations come from'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "reserve" -d 'Reserve an address on every network an IPSet asks for; print its status.reservations. The same IPSet again gets the same answer'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "release" -d 'Release every address reserved for NAME (an IPSet, or a pool request), in every pool; `answered/ADDRESS` frees an address that `--probe` found in use on the wire'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "list" -d 'List every reservation in the store, by pool and address'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "gc" -d 'What a CNI network holds that this node\'s runtime no longer does: every reservation of the network and what its runtime\'s GC makes of it (leaked: this node\'s, not attached, older than the network\'s gc_grace; else kept, and why). Nothing is freed without --free'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "pool" -d 'MetalLB address pools'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "cni" -d 'Act as a CNI IPAM plugin: CNI_COMMAND (ADD, DEL, CHECK, VERSION, GC), CNI_CONTAINERID, CNI_IFNAME and CNI_ARGS from the environment, the network config on stdin, the result or a CNI error object on stdout (exit 1 on error). Plain `ipam` does the same whenever CNI_COMMAND is set, so `"type": "ipam"` finds it on the CNI path'
complete -c ipam -n "__fish_ipam_using_subcommand help; and not __fish_seen_subcommand_from vip netconfig reserve release list gc pool cni help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ipam -n "__fish_ipam_using_subcommand help; and __fish_seen_subcommand_from vip" -f -a "validate" -d 'Check the VIPs with the installer\'s rules (and ours: not a network or broadcast address, not a node\'s address; with --probe, not answered on the wire); list every problem in the installer\'s words and exit 1 if any'
complete -c ipam -n "__fish_ipam_using_subcommand help; and __fish_seen_subcommand_from vip" -f -a "suggest" -d 'Suggest VIPs as OpenStack\'s installer does: hosts 5 (API) and 7 (Ingress) of the first machine network of each family, moving on to the next free address when one is a node\'s, reserved in the store or (with --probe) answered on the wire'
complete -c ipam -n "__fish_ipam_using_subcommand help; and __fish_seen_subcommand_from netconfig" -f -a "validate" -d 'Check a NetConfig with the infra-operator\'s rules and ours (no overlapping cidrs or ranges); list every problem and exit 1 if any'
complete -c ipam -n "__fish_ipam_using_subcommand help; and __fish_seen_subcommand_from pool" -f -a "reserve" -d 'Reserve an address of a MetalLB IPAddressPool for NAME and print it; requests with the same sharing key share one address. The same NAME again gets the same answer'
