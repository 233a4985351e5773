"""Hosts on a real network for benchmarks: tools/netns-cluster's bridge and namespaces, made by
up() and deleted by down() (also after a failure: use it as a context manager)."""
import os
import subprocess

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "netns-cluster")


class Net:
    def __init__(self, names, first=200):
        """A namespace per name on net K, the first K from `first` that no live process holds."""
        self.names = list(names)
        self.k = None
        env = dict(os.environ, CORRAL_NETNS_OWNER=str(os.getpid()))
        for k in range(first, first + 40):
            r = subprocess.run([TOOL, "up", str(k)] + self.names, env=env, capture_output=True, text=True)
            if r.returncode == 0:
                self.k = k
                return
            if r.returncode != 3:  # 3: net k is another live process's
                raise RuntimeError(f"netns-cluster up {k}: {r.stderr.strip()}")
        raise RuntimeError(f"netns-cluster: nets {first} to {first + 39} are all in use")

    def addr(self, name):
        return f"198.18.{self.k}.{self.names.index(name) + 2}"

    def ns(self, name):
        return f"crl{self.k}-{name}"

    def launcher(self, name):
        """An argv prefix that runs a command in `name`'s namespace (exec: the pid is the command's)."""
        return ["ip", "netns", "exec", self.ns(name)]

    def cut(self, name):
        subprocess.run([TOOL, "cut", str(self.k), name], check=True)

    def mend(self, name):
        subprocess.run([TOOL, "mend", str(self.k), name], check=True)

    def down(self):
        if self.k is not None:
            subprocess.run([TOOL, "down", str(self.k)], capture_output=True)
            self.k = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()
