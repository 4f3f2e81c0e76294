# The three roles on Nomad: one group per role, one docker task in each (ctrlinit as PID 1 and
# the role's programs). Not run in this repository's tests (no Nomad here);
# deploy/check_consistency.py holds it to roles.yaml and the roles' conf.d (images, environment,
# kill_timeout against the stop budgets, the checks, restarts).
#
#     nomad job run deploy/nomad.hcl
#
# Needs on the client: the images deploy/build.sh made (force_pull = false), the docker plugin's
# `volumes { enabled = true }` for the bind mounts under /srv/ctrlinit/<role>/, and Consul (the
# script checks run `ctrlinit health` inside the task; *.service.consul names are resolved by the
# host's DNS, e.g. dnsmasq or systemd-resolved forwarding .consul to Consul on 127.0.0.1).
# Host networking, as the background's role containers use: the roles' ports do not collide
# (API 8080, redis 6379 and 6380 on loopback, control 5269, web 80, ctrlinit's probe endpoints
# 9102-9103 on loopback, config's 9101 on every address: it is the peer control and web follow).
#
# Checks: two per role. "ready" (`ctrlinit health`: every program up) decides whether Consul
# offers the service; "live" (`ctrlinit health --live`, what /livez answers: ctrlinit answers and
# no program is past its liveness threshold) alone has check_restart. A program restarting
# within its budget fails "ready" but not "live", so Nomad restarts only what ctrlinit gives up
# on (its exit 75, then the restart block). Script checks run inside the task, so the endpoint
# stays on the loopback; a Consul http check would come from the agent at the node's address.
#
# Exit codes (deploy/README.md): 75 = a program exhausted its restart budget, 0 = stopped on
# request, 2 = bad configuration. A service job's task is restarted whatever its status: at most
# `attempts` times in `interval`, `delay` apart; then (mode = "delay") it waits out the interval
# and goes on. check_restart restarts a task whose "live" check fails 3 times in a row.
#
# (check_consistency.py parses this file with a small HCL reader: blocks, attributes, strings,
# numbers, booleans, lists; keep to those.)
job "ctrlinit-deploy" {
  datacenters = ["dc1"]
  type        = "service"

  group "config" {
    count = 1

    restart {
      attempts = 10
      interval = "2m"
      delay    = "1s"
      mode     = "delay"
    }

    task "config" {
      driver = "docker"

      # [init] stop_timeout (8s) + 3s: ctrlinit stops everything in order first.
      kill_timeout = "11s"
      kill_signal  = "SIGTERM"

      config {
        image        = "ctrlinit-deploy-config:latest"
        force_pull   = false
        network_mode = "host"

        mount {
          type   = "bind"
          source = "/srv/ctrlinit/config/log"
          target = "/var/log/ctrlinit"
        }
        mount {
          type   = "bind"
          source = "/srv/ctrlinit/config/crash"
          target = "/var/crash/ctrlinit"
        }
      }

      env {
        CLUSTER_NAME             = "demo"
        API_PORT                 = "8080"
        REDIS_PORT               = "6379"
        REDIS_MAXMEMORY          = "64mb"
        CTRLINIT_TERMINATION_LOG = "/var/log/ctrlinit/termination-log"
        # [init] http on every address: the checks run inside the task, and control and web
        # follow config's api through it (CONFIG_PEER, their external config-api; read-only).
        PROBE_ADDR               = "0.0.0.0:9101"
      }

      service {
        name         = "config"
        provider     = "consul"
        address_mode = "host"

        check {
          name     = "ctrlinit ready"
          type     = "script"
          command  = "/usr/bin/ctrlinit"
          args     = ["health"]
          interval = "2s"
          timeout  = "3s"
        }

        check {
          name     = "ctrlinit live"
          type     = "script"
          command  = "/usr/bin/ctrlinit"
          args     = ["health", "--live"]
          interval = "2s"
          timeout  = "3s"

          check_restart {
            limit = 3
            grace = "30s"
          }
        }
      }
    }
  }

  group "control" {
    count = 1

    restart {
      attempts = 10
      interval = "2m"
      delay    = "1s"
      mode     = "delay"
    }

    task "control" {
      driver = "docker"

      # [init] stop_timeout (6s) + 3s.
      kill_timeout = "9s"
      kill_signal  = "SIGTERM"

      config {
        image        = "ctrlinit-deploy-control:latest"
        force_pull   = false
        network_mode = "host"

        mount {
          type   = "bind"
          source = "/srv/ctrlinit/control/log"
          target = "/var/log/ctrlinit"
        }
        mount {
          type   = "bind"
          source = "/srv/ctrlinit/control/crash"
          target = "/var/crash/ctrlinit"
        }
        mount {
          type   = "bind"
          source = "/srv/ctrlinit/control/state"
          target = "/var/lib/control"
        }
      }

      env {
        # Nomad does not order groups: the external config-api (config's ctrlinit on its node's
        # port 9101, host networking) does: provisioning waits for it.
        CONFIG_URL               = "http://config.service.consul:8080/config"
        CONFIG_PEER              = "http://config.service.consul:9101"
        RIB_PORT                 = "6380"
        CONTROL_PORT             = "5269"
        SEQUENCE_INTERVAL        = "0.2"
        CTRLINIT_TERMINATION_LOG = "/var/log/ctrlinit/termination-log"
        PROBE_ADDR               = "127.0.0.1:9102"
      }

      service {
        name         = "control"
        provider     = "consul"
        address_mode = "host"

        check {
          name     = "ctrlinit ready"
          type     = "script"
          command  = "/usr/bin/ctrlinit"
          args     = ["health"]
          interval = "2s"
          timeout  = "3s"
        }

        check {
          name     = "ctrlinit live"
          type     = "script"
          command  = "/usr/bin/ctrlinit"
          args     = ["health", "--live"]
          interval = "2s"
          timeout  = "3s"

          check_restart {
            limit = 3
            grace = "30s"
          }
        }
      }
    }
  }

  group "web" {
    count = 1

    restart {
      attempts = 10
      interval = "2m"
      delay    = "1s"
      mode     = "delay"
    }

    task "web" {
      driver = "docker"

      # [init] stop_timeout (5s) + 3s.
      kill_timeout = "8s"
      kill_signal  = "SIGTERM"

      config {
        image        = "ctrlinit-deploy-web:latest"
        force_pull   = false
        network_mode = "host"

        mount {
          type   = "bind"
          source = "/srv/ctrlinit/web/log"
          target = "/var/log/ctrlinit"
        }
        mount {
          type   = "bind"
          source = "/srv/ctrlinit/web/crash"
          target = "/var/crash/ctrlinit"
        }
      }

      env {
        WEB_PORT                 = "80"
        API_UPSTREAM             = "config.service.consul:8080"
        CONFIG_PEER              = "http://config.service.consul:9101"
        NGINX_RESOLVER           = "127.0.0.1"
        CANARY_INTERVAL          = "1"
        CTRLINIT_TERMINATION_LOG = "/var/log/ctrlinit/termination-log"
        PROBE_ADDR               = "127.0.0.1:9103"
      }

      service {
        name         = "web"
        provider     = "consul"
        address_mode = "host"

        check {
          name     = "ctrlinit ready"
          type     = "script"
          command  = "/usr/bin/ctrlinit"
          args     = ["health"]
          interval = "2s"
          timeout  = "3s"
        }

        check {
          name     = "ctrlinit live"
          type     = "script"
          command  = "/usr/bin/ctrlinit"
          args     = ["health", "--live"]
          interval = "2s"
          timeout  = "3s"

          check_restart {
            limit = 3
            grace = "30s"
          }
        }
      }
    }
  }
}
