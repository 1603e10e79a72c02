# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_lb_proxy_global_optspecs
    string join \n h/help V/version
end

function __fish_lb_proxy_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_lb_proxy_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_lb_proxy_using_subcommand
    set -l cmd (__fish_lb_proxy_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -s h -l help -d 'Print help'
complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -s V -l version -d 'Print version'
complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -f -a "run" -d 'Run the proxies of a haproxy.cfg, or what OpenShift runs on a control-plane node. SIGHUP reloads, SIGTERM stops, SIGUSR1 stops once the last connection has ended'
complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -f -a "render" -d 'Print, as haproxy.cfg, the configuration `run` would use'
complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -f -a "check-config" -d 'Check a haproxy.cfg: exit 0 if it is valid, 2 with every error otherwise (like haproxy -c); warnings (what lb-proxy accepts without effect, see lb-proxy.cfg(5)) either way'
complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -f -a "check" -d 'Exit 0 when URL answers 2xx or 3xx, 1 otherwise, like `curl -kLfs URL` (2: a bad URL or timeout)'
complete -c lb-proxy -n "__fish_lb_proxy_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -s f -l config -d 'A haproxy.cfg (`-` for standard input)' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l nodes -d 'The node inventory (ipi-nodes(5)): the masters are the API servers' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l redirect-vip -d 'Redirect VIP:6443 to the first frontend while one of its servers is UP (repeatable; with --cluster, the cluster\'s API VIPs unless --no-redirect)' -r
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l flag-file -d 'The file that exists while the redirect is on (with --cluster, keepalived\'s /var/run/keepalived/iptables-rule-exists)' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l redirect-interval -d 'How often the redirect looks at the servers (on after 3 healthy rounds, off after 11 unhealthy ones)' -r
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l threads -d 'Threads that forward (default: one per core)' -r
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l runtime -d 'How connections are spread over the threads: per-core (a listening socket and an event loop per thread, connections stay on their thread) costs less CPU per request than work-stealing (README)' -r -f -a "per-core\t'One event loop per thread, each with its own listening sockets (SO_REUSEPORT: the kernel spreads new connections), a connection never leaves its thread; checks, monitor and stats run on the main thread'
work-stealing\t'One work-stealing runtime for everything'"
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l no-redirect -d 'With --cluster: no VIP redirect'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -l copy -d 'Move bytes through a buffer rather than with splice(2)'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -s v -l verbose -d 'More log lines (-v debug, -vv trace)'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -s q -l quiet -d 'Warnings and errors only'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand render" -s f -l config -d 'A haproxy.cfg (`-` for standard input)' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand render" -l cluster -d 'The cluster\'s install-config.yaml' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand render" -l nodes -d 'The node inventory (ipi-nodes(5)): the masters are the API servers' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand render" -s h -l help -d 'Print help'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand check-config" -s f -l config -d 'The file to check (`-` for standard input)' -r -F
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand check-config" -s h -l help -d 'Print help'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand check" -l timeout -d 'How long to wait for the answer' -r
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand check" -l servers -d 'URL is lb-proxy\'s stats page (--cluster: http://127.0.0.1:29445/haproxy_stats): print each backend\'s servers UP, and every server that is not UP with why (its last check, passive health\'s marks-down and their reason); exit 0 when every backend has a server UP, 1 when one has none, 2 when the page cannot be read'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand check" -s h -l help -d 'Print help'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand help; and not __fish_seen_subcommand_from run render check-config check help" -f -a "run" -d 'Run the proxies of a haproxy.cfg, or what OpenShift runs on a control-plane node. SIGHUP reloads, SIGTERM stops, SIGUSR1 stops once the last connection has ended'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand help; and not __fish_seen_subcommand_from run render check-config check help" -f -a "render" -d 'Print, as haproxy.cfg, the configuration `run` would use'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand help; and not __fish_seen_subcommand_from run render check-config check help" -f -a "check-config" -d 'Check a haproxy.cfg: exit 0 if it is valid, 2 with every error otherwise (like haproxy -c); warnings (what lb-proxy accepts without effect, see lb-proxy.cfg(5)) either way'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand help; and not __fish_seen_subcommand_from run render check-config check help" -f -a "check" -d 'Exit 0 when URL answers 2xx or 3xx, 1 otherwise, like `curl -kLfs URL` (2: a bad URL or timeout)'
complete -c lb-proxy -n "__fish_lb_proxy_using_subcommand help; and not __fish_seen_subcommand_from run render check-config check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
