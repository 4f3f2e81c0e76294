#!/usr/bin/env python3
"""The `podman kube play` variant of deploy/kubernetes.yaml, generated from it (deploy/test.sh
runs it), so the manifest stays the one for a real cluster.

Podman runs a Deployment as one pod (`NAME-pod-0` in Podman 4, `NAME-pod` in 5: --pod-suffix;
its containers `POD-CONTAINER`) but has no Services and no cluster DNS: on a network of its own
(`podman network create`, with aardvark-dns) a pod is found by its pod name, and the name server
is the network's gateway. So, per Deployment:

  - the Namespace and the Services are left out (Podman has neither);
  - each Deployment is renamed PREFIX-NAME (names of one run do not collide with another's);
  - the values that name another role through a Service (CONFIG_URL, API_UPSTREAM, CONFIG_PEER:
    `config`, `config.ctrlinit-deploy.svc.cluster.local`) name its pod instead, PREFIX-config-pod-0;
  - NGINX_RESOLVER (kube-dns) becomes the network's name server, --resolver;
  - the images get --tag, and the hostPath directories /srv/ctrlinit/... move under --data.

Podman ignores terminationGracePeriodSeconds (it stops with 10 s), the termination message and
readiness probes, and runs liveness probes only with systemd: those stay as they are.

Usage: kube_play.py KUBERNETES_YAML --prefix P --tag T --data DIR --resolver IP [--pod-suffix -pod-0]
         > kube-play.yaml
Needs python3-yaml.
"""

import argparse
import re
import sys

import yaml

SERVICE_HOST = re.compile(r"\b(config)(?:\.ctrlinit-deploy\.svc\.cluster\.local)?(?=:\d)")
NAMED = {"CONFIG_URL", "API_UPSTREAM", "CONFIG_PEER"}


def main():
    ap = argparse.ArgumentParser(
        description="The podman kube play variant of deploy/kubernetes.yaml, on stdout."
    )
    ap.add_argument("manifest", help="the Kubernetes manifest (deploy/kubernetes.yaml)")
    ap.add_argument("--prefix", required=True, help="prefix of the Deployments' (pods') names")
    ap.add_argument("--tag", required=True, help="tag of the role images")
    ap.add_argument("--data", required=True, help="directory the hostPath volumes move under")
    ap.add_argument(
        "--resolver", required=True, help="the network's name server, for NGINX_RESOLVER"
    )
    ap.add_argument(
        "--pod-suffix",
        default="-pod-0",
        help="what Podman appends to a Deployment's pod name (-pod-0 in Podman 4, -pod in 5)",
    )
    a = ap.parse_args()
    out = []
    for doc in yaml.safe_load_all(open(a.manifest)):
        if not doc or doc.get("kind") != "Deployment":
            continue
        name = doc["metadata"]["name"]
        doc["metadata"] = {"name": "%s-%s" % (a.prefix, name), "labels": doc["metadata"].get("labels", {})}
        pod = doc["spec"]["template"]["spec"]
        for c in pod["containers"]:
            c["image"] = re.sub(r":[^:/]+$", ":" + a.tag, c["image"])
            for e in c.get("env", []):
                if e["name"] in NAMED:
                    e["value"] = SERVICE_HOST.sub(lambda m: "%s-%s%s" % (a.prefix, m.group(1), a.pod_suffix), e["value"])
                elif e["name"] == "NGINX_RESOLVER":
                    e["value"] = a.resolver
        for v in pod.get("volumes", []):
            hp = v.get("hostPath")
            if hp and hp["path"].startswith("/srv/ctrlinit/"):
                hp["path"] = a.data.rstrip("/") + "/" + hp["path"][len("/srv/ctrlinit/"):]
        out.append(doc)
    if not out:
        sys.exit("kube_play.py: no Deployment in %s" % a.manifest)
    yaml.safe_dump_all(out, sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
