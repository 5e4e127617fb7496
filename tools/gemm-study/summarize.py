#!/usr/bin/env python3
# Summarize results/*.txt produced by run.sh
import glob, os, collections
R = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
res = {}   # (tag, variant, T, shape) -> dict
reorder = {}; aconv = {}; hdr = set()
for f in sorted(glob.glob(R + "/*_t[12].txt")):
    base = os.path.basename(f)[:-4]
    prefix, tag, _ = base.rsplit("_", 2)  # e.g. dnnl, cold, t1
    for line in open(f):
        p = line.split()
        if line.startswith("#") and ("config" in line or "arch" in line or "onednn" in line or "libxsmm" in line): hdr.add(line.strip())
        if not p: continue
        if p[0] == "RES":
            lib, var, T, M, N, K = p[1], p[2], int(p[3]), int(p[4]), int(p[5]), int(p[6])
            key = (tag, prefix + ":" + var, T, (M, N, K))
            if p[7] == "unsupported": res[key] = None; continue
            res[key] = dict(gf=float(p[7]), med=float(p[8]), gbps=float(p[11]), det=p[13], h=p[14], err=float(p[15]))
        elif p[0] == "REORDER" and tag == "cold":
            reorder[(p[1], int(p[2]), (int(p[3]), int(p[4]), int(p[5])))] = float(p[6])
        elif p[0] == "ACONV" and tag == "cold":
            aconv[(int(p[1]), int(p[2]), int(p[3]))] = float(p[4])
for h in sorted(hdr): print(h)
print("\nBW (1 GiB streaming read):"); print(open(R + "/bw.txt").read())
if os.path.exists(R + "/bw_active.txt"): print("BW with OMP_WAIT_POLICY=ACTIVE:"); print(open(R + "/bw_active.txt").read())
shapes = sorted({k[3] for k in res if k[0] == "cold"}, key=lambda s: (s[1] != 5760, s[1] != 2880, s[0]))
shapes = [s for s in [(1,5760,2880),(8,5760,2880),(64,5760,2880),(128,5760,2880),(512,5760,2880),(2048,5760,2880),(64,2880,2880),(512,2880,2880),(512,1536,2048),(512,2048,768),(32,1536,2048)] if s in shapes]
variants = sorted({k[1] for k in res if k[0] == "cold"})
for T in (1, 2):
    print(f"\nGFLOP/s, {T} thread(s), cold caches (B flushed before each rep); median")
    print("%-20s" % "M,N,K" + "".join("%13s" % v.split(":")[1].replace("matmul_","mm_").replace("bli_sgemm_","").replace("sgemm_","")[:12] for v in variants))
    print("%-20s" % "" + "".join("%13s" % v.split(":")[0][:12] for v in variants))
    for s in shapes:
        row = "%-20s" % ("%d,%d,%d" % s)
        for v in variants:
            r = res.get(("cold", v, T, s), "n/a")
            row += "%13s" % ("unsup" if r is None else "-" if r == "n/a" else "%.1f" % r["gf"])
        print(row)
print("\nDecode: weight-read bandwidth GB/s = bytes(B)/median time (cold = flushed, warm = repeated, B may sit partly in L3)")
for tag in ("cold", "warm"):
    for T in (1, 2):
        for s in [(1,5760,2880),(8,5760,2880)]:
            row = f"{tag} T={T} M={s[0]:<4}"
            for v in variants:
                r = res.get((tag, v, T, s))
                if r: row += " %s=%.1f" % (v.split(":")[1], r["gbps"])
            print(row)
print("\noneDNN B reorder (plain ba -> blocked 'any'), one-time ms:")
for k, v in sorted(reorder.items(), key=lambda x: (x[0][0], x[0][1])): print("  ", k, "%.2f ms" % v)
print("\noneDNN activation conversion f32->bf16 (reorder of A), ms:")
for k, v in sorted(aconv.items()): print("  T=%d M=%d K=%d: %.4f ms" % (k[0], k[1], k[2], v))
print("\nDeterminism / accuracy (cold runs):")
for v in variants:
    nondet = [(T, s) for (tag, vv, T, s), r in res.items() if tag == "cold" and vv == v and r and r["det"] != "det"]
    diff12 = [s for s in shapes if res.get(("cold", v, 1, s)) and res.get(("cold", v, 2, s)) and res[("cold", v, 1, s)]["h"] != res[("cold", v, 2, s)]["h"]]
    same12 = [s for s in shapes if res.get(("cold", v, 1, s)) and res.get(("cold", v, 2, s)) and res[("cold", v, 1, s)]["h"] == res[("cold", v, 2, s)]["h"]]
    errs = [r["err"] for (tag, vv, T, s), r in res.items() if vv == v and r]
    print(f"  {v:34s} repeat-nondet={nondet or 'none'}  1t!=2t on {len(diff12)}/{len(diff12)+len(same12)} shapes {['%d,%d,%d'%s for s in diff12]}  max_rel_err={max(errs) if errs else 0:.1e}")
