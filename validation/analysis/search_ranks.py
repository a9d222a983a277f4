#!/usr/bin/env python3
"""Why published meshes rank low in the mesh search: reads `meshplan validate --json`
(stdin or a file) and prints, per searched row, the published mesh's rank, its predicted
step time against the search's first candidate, the prediction error of the published
layout against its measurement, and how the first candidate differs (PP, CP, schedule,
ZeRO). Then the same grouped: rows whose published layout the model predicts within 15%
of the measurement but ranks outside the top 10 are the ones where the ranking, not the
row's own prediction, is in question.

Usage: meshplan validate --json | python3 validation/analysis/search_ranks.py
"""
import json
import statistics
import sys


def published_pp(layout):
    """PP of a row's layout text ("32 × A100-80GB: tp 1 pp 1 cp 1 ep 1 dp 32")."""
    words = layout.split()
    return int(words[words.index("pp") + 1]) if "pp" in words else 1


def main():
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    report = json.load(src)
    rows = [r for r in report["rows"] if r.get("search") and r["search"].get("rank")]
    out = []
    for r in rows:
        s = r["search"]
        err = (r.get("comparison") or {}).get("relative_error")
        k = s.get("best_knobs") or {}
        top = s.get("top_dims") or {}
        pub_s, top_s = s.get("published_step_s"), s.get("top_step_s")
        out.append({
            "id": r["id"],
            "rank": s["rank"],
            "feasible": s["feasible"],
            "err": err,
            "gap": (pub_s / top_s - 1.0) if pub_s and top_s else None,
            "layout": r["layout"],
            "top": "dp{dp} tp{tp} pp{pp} cp{cp} ep{ep}".format(**top) if top else "-",
            "top_pp": top.get("pp"),
            "knobs": "{} {} v{} mb{}".format(k.get("zero"), k.get("schedule"),
                                             k.get("virtual_stages"), k.get("micro_batch")),
        })
    out.sort(key=lambda x: -x["rank"])
    print(f"{'row':34} {'rank':>6} {'of':>7} {'err':>7} {'gap':>7}  top candidate")
    for x in out:
        e = f"{x['err']*100:+.0f}%" if x["err"] is not None else "-"
        g = f"{x['gap']*100:+.1f}%" if x["gap"] is not None else "-"
        print(f"{x['id'][:34]:34} {x['rank']:>6} {x['feasible']:>7} {e:>7} {g:>7}  {x['top']}")
    ranks = [x["rank"] for x in out]
    top10 = sum(1 for x in ranks if x <= 10)
    print(f"\n{len(out)} ranked rows: top 10 in {top10} ({top10/len(out)*100:.1f}%), median rank {statistics.median(ranks)}")
    accurate_low = [x for x in out if x["err"] is not None and abs(x["err"]) <= 0.15 and x["rank"] > 10]
    print(f"published layout predicted within 15% yet outside the top 10: {len(accurate_low)} rows")
    gaps = [x["gap"] for x in out if x["gap"] is not None and x["rank"] > 10]
    if gaps:
        print(f"  predicted step of the published mesh over the first candidate's, rows outside the top 10: median {statistics.median(gaps)*100:+.1f}%")
    deeper = sum(1 for x in out if x["rank"] > 10 and x["top_pp"] and x["top_pp"] > published_pp(x["layout"]))
    print(f"  rows outside the top 10 whose first candidate has a deeper pipeline than the published: {deeper}")


if __name__ == "__main__":
    main()
