"""Plain-text tables for the terminal (no colour codes, so output pipes cleanly)."""

from __future__ import annotations


def format_table(headers: list[str], rows: list[list], max_width: int = 72) -> str:
    """Left-aligned columns; the last column wraps at `max_width` characters."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    widths[-1] = min(widths[-1], max_width)
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    indent = sum(widths[:-1]) + 2 * (len(widths) - 1)
    for row in cells:
        last = _wrap(row[-1], widths[-1])
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths[:-1])) + ("  " if row[:-1] else "") + last[0])
        lines.extend(" " * indent + more for more in last[1:])
    return "\n".join(line.rstrip() for line in lines)


def _wrap(text: str, width: int) -> list[str]:
    words, lines, current = text.split(), [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return lines + [current] if current or not lines else lines


def check_report(report: dict, title: str) -> str:
    """The `ppl check` table: one row per (factor, variable) edge, then variables and blocks."""
    parts = [title, ""]
    rows = [[f["factor"], f["variable"], f["role"], f["rule"], f["reason"]] for f in report["factors"]]
    parts.append(format_table(["factor", "variable", "role", "rule", "reason"], rows))
    parts.append("")
    rows = [[v["name"], v["kind"], "[" + ", ".join(str(d) for d in v["shape"]) + "]", v["scope"] or "-"]
            for v in report["variables"]]
    parts.append(format_table(["variable", "kind", "shape", "scope"], rows))
    for weight in report.get("weights", []):
        parts.extend(["", f"rows of {weight['plate']} weighted by `{weight['weight']}`: each row stands for that "
                          "many identical observations"])
    for group in report.get("groups", []):
        parts.extend(["", f"joint q: {', '.join(group['variables'])} — {group['reason']}"])
    for chain in report.get("chains", []):
        parts.extend(["", f"chain q: {chain['variable']} — {chain['reason']}"])
    for block in report.get("gaussian_blocks", []):
        layout = block.get("layout", f"one joint Gaussian q ({block['reason']}; its size is known with the data)")
        parts.extend(["", f"Gaussian block: {', '.join(block['variables'])} — {layout}"])
    if report.get("grid"):
        parts.extend(["", f"grid: {report['grid']['variable']} — {report['grid']['description']}"])
    for block in report.get("blocks", []):
        parts.extend(["", f"local block: {', '.join(block['variables'])} — {block['reason']}"])
    schedule = report.get("schedule")
    if schedule and (schedule["name"] != "batch" or schedule.get("locals")):  # a model with groups to visit
        parts.extend(["", f"schedule: {schedule['description']}",
                      f"  {schedule['plan']}; E-step {schedule['estep']}, M-step {schedule['mstep']}"])
    parts.extend(["", *(f"note: {note}" for note in report["notes"])] if report.get("notes") else [])
    return "\n".join(parts) + "\n"
