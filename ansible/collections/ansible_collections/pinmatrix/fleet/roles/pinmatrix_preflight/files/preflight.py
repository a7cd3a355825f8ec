#!/usr/bin/env python3
# pinmatrix preflight: what this node is, as one JSON object on stdout.
# Read-only: safe under --check. Run by roles/pinmatrix_preflight as root.
# Usage: python3 - KDIR RUN_USER   (KDIR "" = find the running kernel's headers)
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys

kdir_wanted = sys.argv[1] if len(sys.argv) > 1 else ""
run_user = sys.argv[2] if len(sys.argv) > 2 else ""


def read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def run(argv):
    if not shutil.which(argv[0]):
        return None
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return "error: %s" % e


release = platform.release()
machine = platform.machine()
cmdline = (read("/proc/cmdline", "") or "").strip()
params = {}
for arg in cmdline.split():
    key, _, value = arg.partition("=")
    if key in ("hugetlb_cma", "cma", "movablecore", "kernelcore", "kho", "iommu", "intel_iommu",
               "amd_iommu", "iommu.passthrough", "iommu.strict"):
        params[key] = value
meminfo = {}
for line in (read("/proc/meminfo", "") or "").splitlines():
    k, _, v = line.partition(":")
    meminfo[k] = v.strip()

# /proc/pagetypeinfo: the "Number of blocks type" table (CMA column included).
pagetype = read("/proc/pagetypeinfo")
blocks = []
if pagetype:
    lines = pagetype.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Number of blocks type"):
            blocks = [re.sub(r"\s+", " ", l.strip()) for l in lines[i:] if l.strip()]
            break
zones = re.findall(r"^Node\s+(\d+),\s+zone\s+(\S+)", read("/proc/zoneinfo", "") or "", re.M)

# memlock of the user the suite runs as (RLIMIT_MEMLOCK: ib_umem_get, io_uring).
if run_user and run_user != "root" and shutil.which("runuser"):
    memlock = run(["runuser", "-u", run_user, "--", "sh", "-c", "ulimit -l"])
else:
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    fmt = lambda x: "unlimited" if x == resource.RLIM_INFINITY else str(x // 1024)
    memlock = "%s kB soft, %s kB hard" % (fmt(soft), fmt(hard))

# RDMA devices, with the driver behind each.
rdma = []
if os.path.isdir("/sys/class/infiniband"):
    for dev in sorted(os.listdir("/sys/class/infiniband")):
        drv = os.path.realpath("/sys/class/infiniband/%s/device/driver" % dev)
        ports = []
        pdir = "/sys/class/infiniband/%s/ports" % dev
        for port in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
            ports.append("%s:%s" % (port, (read("%s/%s/state" % (pdir, port), "?") or "?").strip()))
        rdma.append({"name": dev, "driver": os.path.basename(drv) if os.path.exists(drv) else None,
                     "ports": ports})


def module_version(name):
    if not os.path.isdir("/sys/module/" + name):
        v = None
        if shutil.which("modinfo"):
            p = subprocess.run(["modinfo", "-F", "version", name], capture_output=True, text=True,
                               check=False)
            v = p.stdout.strip() if p.returncode == 0 else None
        return {"loaded": False, "installed": v is not None, "version": v or None}
    v = (read("/sys/module/%s/version" % name, "") or "").strip()
    return {"loaded": True, "version": v or None}


mlx5 = module_version("mlx5_core")
nvidia = module_version("nvidia")
nv_proc = read("/proc/driver/nvidia/version")
if nv_proc and not nvidia.get("version"):
    m = re.search(r"Kernel Module[^0-9]*([0-9]+\.[0-9]+(?:\.[0-9]+)?)", nv_proc)
    nvidia["version"] = m.group(1) if m else None
# The version only: what it says of the host pin (FOLL_LONGTERM or not) is
# the suite's one table (lib/gpu_pin.cpp), applied by `pinmatrix report --fleet`.
amdgpu = module_version("amdgpu")
kallsyms = read("/proc/kallsyms", "") if amdgpu["loaded"] else ""
if amdgpu["loaded"]:
    if not kallsyms or re.search(r"^0+ ", kallsyms, re.M):
        amdgpu["ualink_ioctl"] = "unknown (kallsyms hidden)"
    else:
        amdgpu["ualink_ioctl"] = "present" if "amdgpu_gem_ualink_handle_ioctl" in kallsyms else "absent"
else:
    amdgpu["ualink_ioctl"] = "unknown (amdgpu not loaded)"
ualink_sim = os.path.isdir("/sys/module/ualink_sim")

# IOMMU: hardware units, groups and their default domain type.
iommu_units = sorted(os.listdir("/sys/class/iommu")) if os.path.isdir("/sys/class/iommu") else []
groups_dir = "/sys/kernel/iommu_groups"
groups = sorted(os.listdir(groups_dir)) if os.path.isdir(groups_dir) else []
types = sorted({(read("%s/%s/type" % (groups_dir, g), "") or "").strip() for g in groups} - {""})
iommu = {"units": iommu_units, "groups": len(groups), "domain_types": types,
         "cmdline": {k: v for k, v in params.items() if "iommu" in k}}
iommu["mode"] = ("off (no IOMMU groups)" if not groups else
                 "passthrough" if types == ["identity"] else ",".join(types) or "unknown")

# Kernel headers for the module (no prebuilt kernel objects are shipped).
candidates = [kdir_wanted] if kdir_wanted else ["/lib/modules/%s/build" % release,
                                                "/usr/src/linux-headers-%s" % release]
headers = next((c for c in candidates if os.path.isfile(os.path.join(c, "Makefile"))), None)

io_uring_disabled = read("/proc/sys/kernel/io_uring_disabled")
print(json.dumps({
    "kernel_release": release,
    "kernel_version": platform.version(),
    "machine": machine,
    "cmdline": cmdline,
    "cmdline_params": params,
    "cma": {"total_kb": meminfo.get("CmaTotal"), "free_kb": meminfo.get("CmaFree")},
    "movable_zone": any(z == "Movable" for _, z in zones),
    "zones": sorted({z for _, z in zones}),
    "pagetypeinfo_blocks": blocks,
    "memlock": {"user": run_user or "root", "limit": memlock},
    "rdma_devices": rdma,
    "ibv_devices": run(["ibv_devices"]),
    "rdma_link": run(["rdma", "link"]),
    "mlx5_core": mlx5,
    "nvidia": nvidia,
    "amdgpu": amdgpu,
    "ualink_sim_loaded": ualink_sim,
    "iommu": iommu,
    "kernel_headers": headers,
    "kernel_headers_searched": candidates,
    "io_uring": {"io_uring_disabled": io_uring_disabled.strip() if io_uring_disabled else "0 (no sysctl)"},
    "is_root": os.geteuid() == 0,
}, indent=1, sort_keys=True))
