"""The similarity report's HTML page: copydetect's template, with figures a reader can read.

copydetect's own report draws the score matrix with numbered, unlabelled axes and an unlabelled
histogram; here the matrix's ticks are the submissions' names and every axis says what it counts.

    heatmap(scores, rows, columns)  -> the figure of each row's share of its code found in each column
    histogram(scores, threshold)    -> the figure of the pair scores, the threshold marked
    write_html(result, threshold, path) -> report.html: both figures and the pairs shown side by side
"""

import base64
import importlib.resources
import io
import json
from pathlib import Path


def heatmap(scores, rows: list[str], columns: list[str]):
    """A matplotlib Figure: scores[i, j] (NaN where not compared) drawn with rows[i] and columns[j]
    as the tick labels."""
    from matplotlib.figure import Figure

    side = min(max(len(columns), len(rows)) * 0.25, 30)
    fig = Figure(figsize=(max(7.5, side + 4), max(5.5, side + 2)), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(scores, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(columns)), columns, rotation=90, fontsize="small")
    ax.set_yticks(range(len(rows)), rows, fontsize="small")
    ax.set_xlabel("compared with")
    ax.set_ylabel("submission")
    ax.set_title("Share of a submission's code found in another's")
    fig.colorbar(image, ax=ax, label="share of the row's tokens (blank: not compared)")
    return fig


def histogram(scores: list[float], threshold: float):
    """A matplotlib Figure: how many pairs have each score (the larger of a pair's two directions),
    the flagging threshold drawn as a line."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4), layout="constrained")
    ax = fig.add_subplot()
    ax.hist(scores, bins=20, range=(0, 1))
    ax.axvline(threshold, color="red", linestyle="--", label=f"threshold {threshold:g}")
    ax.set_xlabel("pair score (larger of the two directions)")
    ax.set_ylabel("number of pairs")
    ax.set_title("Pair scores")
    ax.legend()
    return fig


def png_base64(fig) -> str:
    """The figure as a base64 PNG, as copydetect's template embeds it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode()


def figures(result, threshold: float) -> tuple:
    """(heatmap, histogram) of a Similarity: its detector's matrix with the submissions' names."""
    import numpy as np

    detector, names = result.detector, result.names
    matrix = np.array(detector.similarity_matrix[:, :, 0], dtype=float)
    matrix[matrix == -1] = np.nan
    rows = [names[f] for f in detector.test_files]
    columns = [names[f] for f in detector.ref_files]
    return heatmap(matrix, rows, columns), histogram([p.score for p in result.pairs], threshold)


def write_html(result, threshold: float, path: Path) -> Path:
    """report.html of a Similarity: copydetect's template with figures() and the pairs its detector
    shows (get_copied_code_list), names escaped by the template's rendering."""
    import copydetect
    import copydetect.data
    from jinja2 import Template

    detector = result.detector
    matrix, hist = figures(result, threshold)
    template = Template(importlib.resources.files(copydetect.data).joinpath("report.html").read_text("utf-8"))
    html = template.render(
        config_params=json.dumps(detector.conf.to_json(), indent=4),
        css_files=detector.conf.css_files,
        version=copydetect.__version__,
        test_count=len(detector.test_files),
        test_files=detector.test_files,
        compare_count=len(detector.ref_files),
        compare_files=detector.ref_files,
        flagged_file_count=len({p.first for p in result.pairs if p.flagged(threshold)}),
        code_list=detector.get_copied_code_list(),
        sim_mtx_base64=png_base64(matrix),
        sim_hist_base64=png_base64(hist),
    )
    Path(path).write_text(html, encoding="utf-8")
    return Path(path)
