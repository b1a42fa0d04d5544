#!/usr/bin/env python3
"""Builds the Grafana dashboards of this folder from the panel lists below.

    python3 dashboards/generate.py          # rewrite dashboards/*.json
    python3 dashboards/generate.py --check  # fail if a JSON file differs from what this builds
    python3 dashboards/generate.py --normalized FAMILY  # print a READ_TIME family's query, all devices

The JSON files are what users import; this script is how we edit them, so that ids, layout,
datasource references and selectors stay consistent. Standard library only. Every query is
checked against a real Prometheus scraping `gpu-exporter --simulate` by
tests/observability/.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
DS = {"type": "prometheus", "uid": "${datasource}"}
SCHEMA_VERSION = 39
CRITICAL_XIDS = "48|62|64|74|79|95|119|120"

# Label selectors shared by the queries. `cluster` is optional: `.*` also matches a series
# without the label.
NODE = 'cluster=~"$cluster", Hostname=~"$node"'
GPU = NODE + ', gpu=~"$gpu"'
# The selected GPUs' MIG instances.
MIG_DEVICES = GPU + ', GPU_I_ID!=""'
K8S = NODE + ', namespace=~"$namespace"'
EXPORTER_JOB = 'job=~".*(gpu|dcgm)-exporter.*", cluster=~"$cluster"'


def util(sel):
    """Utilization ratio of every GPU (driver) and MIG instance (engine activity), from the
    normalized layer of the recording rules."""
    return f"accelerator_utilization_ratio{{{sel}}}"


def device_busy(sel):
    """How busy each device is (graphics engine activity where served, else utilization), one
    value per device keyed by (cluster, UUID, GPU_I_ID), from device:accelerator_busy:ratio."""
    return f"max by (cluster, UUID, GPU_I_ID) (device:accelerator_busy:ratio{{{sel}}})"


def device_util(sel):
    """One utilization value per device, keyed by (cluster, UUID, GPU_I_ID)."""
    return f"max by (cluster, UUID, GPU_I_ID) ({util(sel)})"


# What a GPU is (accelerator_info: one series per GPU), for the panels that show it. The
# device series carry only the identity labels (gpu-exporter's lean shape has the model on
# gpu_device_info alone); readers join these in by (cluster, Hostname, UUID).
DESCRIPTIONS = "modelName, pci_bus_id, DCGM_FI_DRIVER_VERSION"


def described(expr, by="Hostname, gpu, UUID", labels=DESCRIPTIONS):
    """`expr` (one series per GPU, with `cluster`, `Hostname` and `UUID`) with the GPU's descriptions
    joined from accelerator_info, one series per (`by`, descriptions)."""
    return (f"max by ({by}, {labels}) ({expr}"
            f" * on (cluster, Hostname, UUID) group_left ({labels}) accelerator_info)")


def per_gpu(metric, sel=GPU, agg="max"):
    """One series per physical GPU, whatever the MIG shape (instances repeating device
    fields, or pod labels, do not multiply it)."""
    return f"{agg} by (Hostname, gpu) ({metric}{{{sel}}})"


# The device fields that only panels read, normalized when a panel asks instead of recorded
# by a rule (issue 51: a recorded series costs an evaluation per GPU every interval, and a
# head series, whether anyone looks or not). Each is named like the series a rule would have
# recorded (alerts/README.md, "Normalized when read"), with every name a node may serve it
# under (gpu-exporter native and dcgm-exporter up to 4.8: DCGM's own names; 4.9 and 4.10:
# the base-unit names) and the text that turns each into base units. "G": one series per
# physical GPU (GPU_IDS); "D": per device, a whole GPU or a MIG instance (DEVICE_IDS). A
# third item, where there is one: for a GPU without any of those names, dcgm-exporter 4.10's
# profiling byte rates, each summed per GPU and scrape (a MIG GPU has them per instance), then
# added together (NVLink: sent plus received).
GPU_IDS = "cluster, Hostname, gpu, UUID"
DEVICE_IDS = GPU_IDS + ", GPU_I_ID, GPU_I_PROFILE"
READ_TIME = {
    "accelerator_graphics_engine_active_ratio": ("D", [("DCGM_FI_PROF_GR_ENGINE_ACTIVE", ""),
                                                       ("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "")]),
    "accelerator_xid_last_code": ("G", [("DCGM_FI_DEV_XID_ERRORS", ""), ("DCGM_FI_DEV_XID_ERROR", "")]),
    "accelerator_pcie_transmit_bytes_per_second": ("G", [("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", " * 1024")],
                                                   ["DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND"]),
    "accelerator_pcie_receive_bytes_per_second": ("G", [("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", " * 1024")],
                                                  ["DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND"]),
    "accelerator_nvlink_bytes_per_second": ("G", [("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", " * 1048576"),
                                                  ("DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND", "")],
                                            ["DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND"]),
    "accelerator_memory_temperature_celsius": ("G", [("DCGM_FI_DEV_MEMORY_TEMP", ""), ("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", "")]),
    "accelerator_power_limit_watts": ("G", [("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", ""),
                                            ("DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS", "")]),
    "accelerator_energy_joules_total": ("G", [("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", " / 1000"),
                                              ("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", "")]),
    "accelerator_sm_clock_hertz": ("G", [("DCGM_FI_DEV_SM_CLOCK", " * 1000000"), ("DCGM_FI_DEV_SM_CLOCK_HERTZ", "")]),
    "accelerator_memory_clock_hertz": ("G", [("DCGM_FI_DEV_MEM_CLOCK", " * 1000000"), ("DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", "")]),
    "accelerator_thermal_violation_seconds_total": ("G", [("DCGM_FI_DEV_THERMAL_VIOLATION", " / 1e9"),
                                                          ("DCGM_FI_DEV_GPU_THERMAL_THROTTLE_SECONDS_TOTAL", "")]),
    "accelerator_power_violation_seconds_total": ("G", [("DCGM_FI_DEV_POWER_VIOLATION", " / 1e9"),
                                                        ("DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL", "")]),
    "accelerator_pcie_replays_total": ("G", [("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", ""), ("DCGM_FI_DEV_PCIE_REPLAY_TOTAL", "")]),
    "accelerator_ecc_corrected_errors_total": ("G", [("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "")]),
    "accelerator_remapped_rows_uncorrectable_total": ("G", [("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", ""),
                                                            ("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", "")]),
    "accelerator_remapped_rows_correctable_total": ("G", [("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", ""),
                                                          ("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", "")]),
    "accelerator_memory_bandwidth_utilization_ratio": ("D", [("DCGM_FI_DEV_MEM_COPY_UTIL", " / 100"),
                                                             ("DCGM_FI_DEV_MEMORY_UTIL_RATIO", ""),
                                                             ("DCGM_FI_PROF_DRAM_ACTIVE", ""),
                                                             ("DCGM_FI_PROF_DRAM_UTIL_RATIO", "")]),
    "accelerator_encoder_utilization_ratio": ("D", [("DCGM_FI_DEV_ENC_UTIL", " / 100"), ("DCGM_FI_DEV_ENC_UTIL_RATIO", "")]),
    "accelerator_decoder_utilization_ratio": ("D", [("DCGM_FI_DEV_DEC_UTIL", " / 100"), ("DCGM_FI_DEV_DEC_UTIL_RATIO", "")]),
    "accelerator_sm_active_ratio": ("D", [("DCGM_FI_PROF_SM_ACTIVE", ""), ("DCGM_FI_PROF_SM_UTIL_RATIO", "")]),
    "accelerator_sm_occupancy_ratio": ("D", [("DCGM_FI_PROF_SM_OCCUPANCY", ""), ("DCGM_FI_PROF_SM_OCCUPANCY_RATIO", "")]),
    "accelerator_tensor_active_ratio": ("D", [("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", ""), ("DCGM_FI_PROF_TENSOR_UTIL_RATIO", "")]),
    "accelerator_dram_active_ratio": ("D", [("DCGM_FI_PROF_DRAM_ACTIVE", ""), ("DCGM_FI_PROF_DRAM_UTIL_RATIO", "")]),
    "accelerator_fp64_active_ratio": ("D", [("DCGM_FI_PROF_PIPE_FP64_ACTIVE", ""), ("DCGM_FI_PROF_FP64_UTIL_RATIO", "")]),
    "accelerator_fp32_active_ratio": ("D", [("DCGM_FI_PROF_PIPE_FP32_ACTIVE", ""), ("DCGM_FI_PROF_FP32_UTIL_RATIO", "")]),
    "accelerator_fp16_active_ratio": ("D", [("DCGM_FI_PROF_PIPE_FP16_ACTIVE", ""), ("DCGM_FI_PROF_FP16_UTIL_RATIO", "")]),
}


def host_selectors(sel):
    """`sel` and, when it selects by node, the same for a node that names its host label
    `hostname` (dcgm-exporter 4.8.3 and later, the dcgm-4.8.4 and later profiles)."""
    if 'Hostname=~' not in sel:
        return [sel]
    return [sel, sel.replace('Hostname=~', 'hostname=~')]


def normalized(family, sel=GPU, over="{}"):
    """The READ_TIME `family` of the devices `sel` selects, as its rule would have recorded it:
    each raw name under each host label, `over` (a format string: a range function for a
    counter, "increase({}[$__range])") applied to each raw series, then its factor to base
    units, the host label moved to `Hostname`, and the maximum by the identity labels (a
    device field repeated on every MIG instance, or a node scraped by two exporters, counts
    once); where the family has profiling rates, a GPU without those names takes their sums
    per scrape."""
    scope, names, *rates = READ_TIME[family]

    def raw(name):
        return [over.format(f"{name}{{{s}}}" if s else name) for s in host_selectors(sel)]

    arms = [a + factor for name, factor in names for a in raw(name)]
    by = GPU_IDS if scope == "G" else DEVICE_IDS
    moved = f'label_replace({" or ".join(arms)}, "Hostname", "$1", "hostname", "(.+)")'
    if not rates:
        return f"max by ({by}) ({moved})"
    summed = " + ".join(f'sum by ({by}, job, instance) (label_replace({" or ".join(raw(name))}, '
                        f'"Hostname", "$1", "hostname", "(.+)"))' for name in rates[0])
    return f"max by ({by}) ({moved} or on ({by}) ({summed}))"


def per_gpu_normalized(family, sel=GPU, agg="max", over="{}"):
    """per_gpu of a READ_TIME family."""
    return f"{agg} by (Hostname, gpu) ({normalized(family, sel, over)})"


def profiling(field):
    """accelerator_<field>_ratio of the selected devices, normalized when read."""
    return normalized(f"accelerator_{field}_ratio")


REFS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# Labels a pod table does not show.
POD_TABLE_HIDDEN = ("Time", "__name__", "job", "instance", "pci_bus_id", "device", "pod_uid")


def merged_table(names, hidden=("Time",), only_rows_with_first=False):
    """Transformations of a table of instant queries: one row per series, the value of query
    i in a column named names[i]; with only_rows_with_first, rows without the first query's
    value are left out."""
    steps = [{"id": "merge", "options": {}}]
    if only_rows_with_first:
        steps.append({"id": "filterByValue", "options": {
            "filters": [{"fieldName": "Value #A", "config": {"id": "isNull", "options": {}}}],
            "type": "exclude", "match": "any"}})
    steps.append({"id": "organize", "options": {
        "excludeByName": {h: True for h in hidden},
        "renameByName": {f"Value #{REFS[i]}": n for i, n in enumerate(names)}}})
    return steps


def unit_overrides(units):
    """Field overrides giving the named table columns their units: [(column, unit)]."""
    return [{"matcher": {"id": "byName", "options": n}, "properties": [{"id": "unit", "value": u}]}
            for n, u in units]


MIG_LEGEND = "{{Hostname}} GPU {{gpu}} {{GPU_I_PROFILE}} {{GPU_I_ID}}"
GPU_LEGEND = "{{Hostname}} GPU {{gpu}}"


class Dashboard:
    def __init__(self, uid, title, description, variables, tags):
        self.uid = uid
        self.title = title
        self.description = description
        self.variables = variables
        self.tags = tags
        self.panels = []
        self.next_id = 1
        self.x = 0
        self.y = 0
        self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self.x = 0
            self.y += self.row_h
            self.row_h = 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.x, self.row_h = 0, 0
        self.panels.append(
            {
                "type": "row",
                "id": self._id(),
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "panels": [],
            }
        )
        self.y += 1

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def panel(self, kind, title, targets, unit, w=12, h=8, description="", **extra):
        tgts = []
        for i, t in enumerate(targets):
            expr, legend = (t, "") if isinstance(t, str) else t
            tgt = {
                "datasource": DS,
                "refId": REFS[i],
                "expr": expr,
                "legendFormat": legend or "__auto",
                "range": kind in ("timeseries",),
                "instant": kind not in ("timeseries",),
            }
            if kind == "table":
                tgt["format"] = "table"
            tgts.append(tgt)
        defaults = {"unit": unit}
        defaults.update(extra.pop("defaults", {}))
        p = {
            "type": kind,
            "id": self._id(),
            "title": title,
            "description": description,
            "datasource": DS,
            "gridPos": self._place(w, h),
            "targets": tgts,
            "fieldConfig": {"defaults": defaults, "overrides": extra.pop("overrides", [])},
            "options": extra.pop("options", {}),
        }
        if kind == "timeseries":
            p["fieldConfig"]["defaults"].setdefault("custom", {"fillOpacity": 10, "showPoints": "never"})
            p["options"] = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]},
                            "tooltip": {"mode": "multi", "sort": "desc"}} | p["options"]
        if kind in ("stat", "gauge", "bargauge"):
            p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}} | p["options"]
        p.update(extra)
        self.panels.append(p)

    def json(self):
        return {
            "annotations": {
                "list": [
                    {
                        "builtIn": 1,
                        "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                        "enable": True,
                        "hide": True,
                        "iconColor": "rgba(0, 211, 255, 1)",
                        "name": "Annotations & Alerts",
                        "type": "dashboard",
                    }
                ]
            },
            "description": self.description,
            "editable": True,
            "graphTooltip": 1,
            "id": None,
            "links": [
                {"asDropdown": True, "includeVars": True, "keepTime": True, "tags": ["gpu-exporter"],
                 "title": "GPU dashboards", "type": "dashboards"}
            ],
            "panels": self.panels,
            "refresh": "30s",
            "schemaVersion": SCHEMA_VERSION,
            "tags": ["gpu-exporter"] + self.tags,
            "templating": {"list": self.variables},
            "time": {"from": "now-6h", "to": "now"},
            "timepicker": {},
            "timezone": "",
            "title": self.title,
            "uid": self.uid,
            "version": 1,
        }


def datasource_var():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []}


def query_var(name, label, query, multi=True, include_all=True, hide=0, description=""):
    return {
        "name": name,
        "label": label,
        "description": description,
        "type": "query",
        "datasource": DS,
        "query": {"query": query, "refId": f"{name}-var"},
        "definition": query,
        "refresh": 2,
        "sort": 3,
        "multi": multi,
        "includeAll": include_all,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": hide,
        "regex": "",
        "options": [],
    }


def cluster_var(series="accelerator_up"):
    """The optional `cluster` variable, its values read from `series` (a dashboard that reads
    recording rules only takes them from one of those)."""
    return query_var("cluster", "Cluster", f"label_values({series}, cluster)",
                     description="Optional: the `cluster` label, when your Prometheus sets one.")


def node_var():
    return query_var("node", "Node", 'label_values(accelerator_up{cluster=~"$cluster"}, Hostname)')


def gpu_var():
    return query_var("gpu", "GPU", 'label_values(accelerator_up{cluster=~"$cluster", Hostname=~"$node"}, gpu)')


# ---------------------------------------------------------------------------------------
def nodes():
    d = Dashboard(
        "gpu-exporter-nodes",
        "GPU nodes",
        "GPUs and MIG instances of the selected nodes (gpu-exporter or dcgm-exporter). "
        "Device-level fields (power, temperature, clocks, energy) are taken once per physical "
        "GPU, so MIG instances never count twice. Panels marked 'recommended counters' need "
        "counters/recommended.csv.",
        [datasource_var(), cluster_var(), node_var(), gpu_var()],
        ["gpu", "nvidia"],
    )
    d.row("Overview")
    d.panel("stat", "GPUs up", [f"count(accelerator_up{{{GPU}}} == 1)"], "none", w=4, h=4,
            description="Physical GPUs that answer the driver.")
    d.panel("stat", "MIG instances", [f"count(accelerator_memory_used_bytes{{{GPU}, GPU_I_ID!=\"\"}})"], "none", w=4, h=4,
            description="MIG GPU instances exported on the selected GPUs.")
    d.panel("stat", "Power", [f"sum({per_gpu('accelerator_power_watts')})"], "watt", w=4, h=4,
            description="Board power of the selected GPUs, each GPU once.")
    d.panel("gauge", "Average temperature", [f"avg({per_gpu('accelerator_temperature_celsius')})"], "celsius", w=4, h=4,
            defaults={"min": 0, "max": 100, "thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": 80}, {"color": "red", "value": 85}]}})
    d.panel("gauge", "Average utilization", [f"avg({util(GPU)})"], "percentunit", w=4, h=4,
            description="Average over whole GPUs (driver utilization) and MIG instances (engine activity).",
            defaults={"min": 0, "max": 1})
    d.panel("gauge", "Framebuffer used",
            [f"sum(accelerator_memory_used_bytes{{{GPU}}}) / sum(accelerator_memory_used_bytes{{{GPU}}} + accelerator_memory_free_bytes{{{GPU}}})"],
            "percentunit", w=4, h=4, defaults={"min": 0, "max": 1})

    d.row("Thermals, power and energy")
    d.panel("timeseries", "GPU temperature", [(per_gpu("accelerator_temperature_celsius"), GPU_LEGEND)], "celsius")
    d.panel("timeseries", "Memory temperature", [(per_gpu_normalized("accelerator_memory_temperature_celsius"), GPU_LEGEND)], "celsius",
            description="HBM temperature; GDDR boards do not report it.")
    d.panel("timeseries", "Power usage",
            [(per_gpu("accelerator_power_watts"), GPU_LEGEND),
             (f"max({per_gpu_normalized('accelerator_power_limit_watts')})", "highest power limit")],
            "watt", description="The power limit line needs the recommended counters.")
    d.panel("bargauge", "Energy over the time range",
            [(per_gpu_normalized("accelerator_energy_joules_total", over="increase({}[$__range])") + " / 3.6e6",
              GPU_LEGEND)],
            "kwatth", description="From the driver's energy counter, per GPU.",
            options={"displayMode": "gradient", "orientation": "horizontal"})
    d.panel("timeseries", "SM clock", [(per_gpu_normalized("accelerator_sm_clock_hertz"), GPU_LEGEND)], "hertz")
    d.panel("timeseries", "Memory clock", [(per_gpu_normalized("accelerator_memory_clock_hertz"), GPU_LEGEND)], "hertz")
    reasons = [(4, "power cap (software)"), (8, "hardware slowdown"), (32, "thermal (software)"),
               (64, "thermal (hardware)"), (128, "power brake (hardware)")]
    d.panel("timeseries", "GPUs held down, by reason",
            [(f"sum(floor({per_gpu('accelerator_clock_event_reasons')} / {bit}) % 2)", name)
             for bit, name in reasons],
            "none", w=24,
            description="Number of selected GPUs whose clocks are held down, per clock-event reason "
                        "(recommended counters).")

    d.row("Utilization and profiling")
    d.panel("timeseries", "GPU utilization", [(f"accelerator_utilization_ratio{{{GPU}, GPU_I_ID=\"\"}}", GPU_LEGEND)], "percentunit",
            description="Driver utilization of whole GPUs (not reported for MIG-enabled GPUs).",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "MIG instance activity",
            [(normalized("accelerator_graphics_engine_active_ratio", MIG_DEVICES), MIG_LEGEND)], "percentunit",
            description="Graphics/compute engine activity of each MIG instance (GPM on Hopper and later, DCGM before).",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "Tensor core activity",
            [(normalized("accelerator_tensor_active_ratio"), MIG_LEGEND)], "percentunit",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "Profiling activity (average of the selected devices)",
            [(f"avg({profiling(f)})", name) for f, name in [
                ("graphics_engine_active", "graphics engine"), ("sm_active", "SM active"),
                ("sm_occupancy", "SM occupancy"), ("tensor_active", "tensor pipes"),
                ("dram_active", "memory interface"), ("fp64_active", "FP64"),
                ("fp32_active", "FP32"), ("fp16_active", "FP16")]],
            "percentunit", description="SM, occupancy and FP pipes need the recommended counters.",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "Memory bandwidth utilization",
            [(normalized("accelerator_memory_bandwidth_utilization_ratio"), MIG_LEGEND)], "percentunit",
            description="Memory copy utilization of whole GPUs; memory interface activity of MIG instances.",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "Video encoder and decoder",
            [(normalized("accelerator_encoder_utilization_ratio"), "{{Hostname}} GPU {{gpu}} encoder"),
             (normalized("accelerator_decoder_utilization_ratio"), "{{Hostname}} GPU {{gpu}} decoder")],
            "percentunit", defaults={"min": 0, "max": 1})

    d.row("Memory")
    d.panel("timeseries", "Framebuffer used", [(f"accelerator_memory_used_bytes{{{GPU}}}", MIG_LEGEND)], "bytes")
    d.panel("timeseries", "Framebuffer used, share of the device",
            [(f"accelerator_memory_used_bytes{{{GPU}}} / (accelerator_memory_used_bytes{{{GPU}}} + accelerator_memory_free_bytes{{{GPU}}})",
              MIG_LEGEND)],
            "percentunit", defaults={"min": 0, "max": 1})

    d.row("PCIe and NVLink")
    d.panel("timeseries", "PCIe traffic",
            [(per_gpu_normalized('accelerator_pcie_transmit_bytes_per_second'), "{{Hostname}} GPU {{gpu}} sent"),
             (per_gpu_normalized('accelerator_pcie_receive_bytes_per_second'), "{{Hostname}} GPU {{gpu}} received")],
            "Bps", description="From the driver's PCIe counters (KB/s; recommended counters), or on a dcgm-exporter 4.10 node its profiling PCIe bytes per second.")
    d.panel("timeseries", "NVLink traffic",
            [(per_gpu_normalized('accelerator_nvlink_bytes_per_second'), GPU_LEGEND)], "Bps",
            description="Sent plus received on all links.")

    d.row("GPUs")
    table_cols = [
        (described(f"accelerator_temperature_celsius{{{GPU}}}"), "temperature"),
        (described(f"accelerator_power_watts{{{GPU}}}"), "power"),
        (described(normalized("accelerator_sm_clock_hertz")), "SM clock"),
        (described(f"accelerator_utilization_ratio{{{GPU}, GPU_I_ID=\"\"}}"), "utilization"),
        (described(f"accelerator_up{{{GPU}}}"), "up"),
        (described(normalized("accelerator_xid_last_code")), "last Xid"),
    ]
    d.panel("table", "GPUs", [c for c, _ in table_cols], "none", w=24, h=9,
            description="One row per physical GPU, with its model, PCI bus id and driver version (accelerator_info). "
                        "Utilization is empty on a GPU in MIG mode (see the MIG table).",
            transformations=merged_table([n for _, n in table_cols]),
            overrides=unit_overrides([("temperature", "celsius"), ("power", "watt"), ("SM clock", "hertz"),
                                      ("utilization", "percentunit")]))
    mig_cols = [
        (f"max by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE) ({normalized('accelerator_graphics_engine_active_ratio', MIG_DEVICES)})", "activity"),
        (f"max by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE) (accelerator_memory_used_bytes{{{GPU}, GPU_I_ID!=\"\"}})", "memory used"),
        (f"max by (Hostname, gpu, GPU_I_ID, GPU_I_PROFILE) (accelerator_memory_used_bytes{{{GPU}, GPU_I_ID!=\"\"}} / "
         f"(accelerator_memory_used_bytes{{{GPU}, GPU_I_ID!=\"\"}} + accelerator_memory_free_bytes{{{GPU}, GPU_I_ID!=\"\"}}))", "memory share"),
    ]
    d.panel("table", "MIG instances", [c for c, _ in mig_cols], "none", w=24, h=9,
            description="One row per MIG GPU instance, under its GPU (column gpu).",
            transformations=merged_table([n for _, n in mig_cols]),
            overrides=unit_overrides([("activity", "percentunit"), ("memory used", "bytes"),
                                      ("memory share", "percentunit")]))
    return d


# ---------------------------------------------------------------------------------------
def kubernetes():
    d = Dashboard(
        "gpu-exporter-kubernetes",
        "GPU use by Kubernetes workloads",
        "Who holds the GPUs and MIG instances and how much they use them (gpu-exporter with -k). "
        "A device shared by n containers counts 1/n for each; a MIG instance counts as its share "
        "of the GPU. The GPU-hours, energy and per-namespace panels read the recording rules of "
        "alerts/gpu-exporter.rules.yaml.",
        [datasource_var(), cluster_var(), node_var(),
         query_var("namespace", "Namespace",
                   'label_values(allocation:gpu_allocation:info{cluster=~"$cluster", Hostname=~"$node"}, namespace)')],
        ["gpu", "kubernetes"],
    )
    alloc = f'allocation:gpu_allocation:info{{{K8S}}}'
    ns_sel = 'cluster=~"$cluster", namespace=~"$namespace"'

    def held(cmp):
        """Allocation rows whose device's utilization `cmp` 0.05 (`<`: only idle ones;
        `< bool`: every row, 1 when idle)."""
        return (f"(max by (cluster, UUID, GPU_I_ID) ({util(NODE)}) {cmp} 0.05)"
                f" * on (cluster, UUID, GPU_I_ID) group_right () {alloc}")

    idle = held("<")

    d.row("Allocation")
    d.panel("stat", "Devices allocated", [f"sum(node:accelerator_allocated_devices:sum{{{NODE}}})"], "none", w=4, h=4,
            description="Device IDs of GPU resources the kubelet has allocated to containers.")
    d.panel("stat", "Devices allocatable", [f"sum(node:accelerator_allocatable_devices:sum{{{NODE}}})"], "none", w=4, h=4)
    d.panel("gauge", "Allocated share",
            [f"sum(node:accelerator_allocated_devices:sum{{{NODE}}}) / sum(node:accelerator_allocatable_devices:sum{{{NODE}}})"],
            "percentunit", w=4, h=4, defaults={"min": 0, "max": 1})
    d.panel("stat", "Allocated but idle now", [f"count({idle})"], "none", w=4, h=4,
            description="Devices held by a container and below 5 % utilization.",
            defaults={"noValue": "0", "thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": 1}]}})
    d.panel("stat", "GPU-equivalents held", [f"sum(namespace:accelerator_allocated_gpus:sum{{{ns_sel}}})"],
            "none", w=4, h=4, description="Recording rule; MIG instances weighted by size.")
    d.panel("stat", "GPU-equivalents busy", [f"sum(namespace:accelerator_busy_gpus:sum{{{ns_sel}}})"],
            "none", w=4, h=4, description="Held GPU-equivalents times their utilization (recording rule).")
    d.panel("timeseries", "Allocated versus allocatable, by resource",
            [(f"sum by (resource) (gpu_allocated_devices{{{NODE}}})", "{{resource}} allocated"),
             (f"sum by (resource) (gpu_allocatable_devices{{{NODE}}})", "{{resource}} allocatable")],
            "none", w=24)

    d.row("Use by namespace, workload and pod")
    d.panel("timeseries", "GPU-equivalents busy, by namespace",
            [(f"namespace:accelerator_busy_gpus:sum{{{ns_sel}}}", "{{namespace}}")], "none")
    d.panel("timeseries", "Utilization of held devices, by namespace",
            [(f"namespace:accelerator_utilization:ratio{{{ns_sel}}}", "{{namespace}}")], "percentunit",
            defaults={"min": 0, "max": 1})
    d.panel("table", "Workloads",
            [f"sum by (namespace, workload_kind, workload_name) (allocation:accelerator_allocated_gpus:ratio{{{K8S}}})",
             f"sum by (namespace, workload_kind, workload_name) (allocation:accelerator_allocated_gpus:ratio{{{K8S}}}"
             f" * on (cluster, UUID, GPU_I_ID) group_left () {device_busy(NODE)})"],
            "none", w=24, description="GPU-equivalents held and busy per owning workload (pods without an owner show an empty workload).",
            transformations=merged_table(["GPUs held", "GPUs busy"]))
    d.panel("table", "Pods and their devices",
            [f"{alloc} * on (cluster, UUID, GPU_I_ID) group_left () {device_util(NODE)}",
             f"{alloc} * on (cluster, UUID, GPU_I_ID) group_left () max by (cluster, UUID, GPU_I_ID) (accelerator_memory_used_bytes{{{NODE}}})"],
            "none", w=24, h=10,
            description="Every container holding a GPU or MIG instance, with the device's utilization and memory in use.",
            transformations=merged_table(["utilization", "device memory used"], hidden=POD_TABLE_HIDDEN),
            overrides=unit_overrides([("utilization", "percentunit"), ("device memory used", "bytes")]))
    d.panel("timeseries", "Shared GPUs: each container's own SM use",
            [(f"gpu_container_sm_utilization_ratio{{{K8S}}}", "{{namespace}}/{{pod}} {{container}} GPU {{gpu}}")],
            "percentunit", description="From NVML's per-process utilization (time-sliced and MPS GPUs).",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "Shared GPUs: each container's own memory",
            [(f"gpu_container_memory_used_bytes{{{K8S}}}", "{{namespace}}/{{pod}} {{container}} GPU {{gpu}}")],
            "bytes")

    d.row("Idle allocations")
    d.panel("table", "Allocated but idle",
            [idle,
             f"sum_over_time(({held('< bool')})[$__range:$__interval]) * $__interval_ms / 1000"],
            "none", w=24, h=9,
            description="Devices a container holds while below 5 % utilization, and how long each was idle within the time range.",
            transformations=merged_table(["utilization now", "idle in range"], hidden=POD_TABLE_HIDDEN,
                                         only_rows_with_first=True),
            overrides=unit_overrides([("utilization now", "percentunit"), ("idle in range", "s")]))

    d.row("Cost: GPU-hours and energy over the time range")
    d.panel("bargauge", "GPU-hours by namespace",
            [(f"sum by (namespace) (sum_over_time(namespace:accelerator_allocated_gpus:sum{{{ns_sel}}}[$__range:$__interval])) * $__interval_ms / 3600000",
              "{{namespace}}")],
            "h", description="GPU-equivalents held, integrated over the dashboard's time range.",
            options={"displayMode": "gradient", "orientation": "horizontal"})
    d.panel("bargauge", "Energy by namespace",
            [(f"sum by (namespace) (sum_over_time(namespace:accelerator_power_watts:sum{{{ns_sel}}}[$__range:$__interval])) * $__interval_ms / 3.6e9",
              "{{namespace}}")],
            "kwatth", description="Board power split by GPU-equivalents held, integrated over the time range.",
            options={"displayMode": "gradient", "orientation": "horizontal"})
    d.panel("timeseries", "Power by namespace",
            [(f"namespace:accelerator_power_watts:sum{{{ns_sel}}}", "{{namespace}}")], "watt", w=24)
    return d


# ---------------------------------------------------------------------------------------
def health():
    d = Dashboard(
        "gpu-exporter-health",
        "GPU health",
        "Faults of the selected GPUs (Xid, ECC, row remapping, NVLink, throttling, lost devices) and "
        "the exporter's own health. ECC, row-remap pending, NVLink errors and throttling reasons need "
        "counters/recommended.csv.",
        [datasource_var(), cluster_var(), node_var(), gpu_var()],
        ["gpu", "health"],
    )
    red_at_1 = {"noValue": "0", "thresholds": {"mode": "absolute", "steps": [
        {"color": "green", "value": None}, {"color": "red", "value": 1}]}}
    def xid_increase(sel, window):
        # Xid series are born at a code's first occurrence (zero series are opt-in), and
        # Prometheus' increase() does not count a series' first sample: a series born in the
        # window counts with its whole value (the `unless … offset` arm), the others by
        # increase(). VictoriaMetrics counts the first sample itself; both agree this way.
        x = f"accelerator_xid_errors_total{{{sel}}}"
        return f"(({x} unless {x} offset {window}) * 1) or increase({x}[{window}])"

    d.row("Now")
    d.panel("stat", "GPUs lost", [f"count(accelerator_up{{{GPU}}} == 0)"], "none", w=4, h=4, defaults=red_at_1)
    d.panel("stat", "Critical Xids in range",
            [f'sum({xid_increase(f"{GPU}, xid=~{chr(34)}{CRITICAL_XIDS}{chr(34)}", "$__range")})'], "none", w=4, h=4,
            defaults=red_at_1 | {"decimals": 0})
    d.panel("stat", "GPUs with uncorrectable ECC errors",
            [f"count({per_gpu('accelerator_ecc_uncorrectable_errors_total')} > 0)"], "none", w=4, h=4, defaults=red_at_1)
    d.panel("stat", "Row remap failed", [f"count({per_gpu('accelerator_row_remap_failed')} == 1)"], "none",
            w=4, h=4, defaults=red_at_1)
    d.panel("stat", "Row remap pending", [f"count({per_gpu('accelerator_row_remap_pending')} == 1)"], "none",
            w=4, h=4, defaults=red_at_1)
    d.panel("stat", "GPUs in hardware slowdown",
            [f"count(floor({per_gpu('accelerator_clock_event_reasons')} / 8) % 2 == 1"
             f" or floor({per_gpu('accelerator_clock_event_reasons')} / 64) % 2 == 1"
             f" or floor({per_gpu('accelerator_clock_event_reasons')} / 128) % 2 == 1)"],
            "none", w=4, h=4, description="Hardware slowdown, hardware thermal slowdown or power brake.",
            defaults=red_at_1)

    d.row("Xid errors")
    d.panel("table", "Xid errors in range, by code and GPU",
            [f"sum by (Hostname, gpu, UUID, xid) ({xid_increase(GPU, '$__range')}) > 0",
             f"max by (Hostname, gpu, UUID, xid) (gpu_xid_last_seen_timestamp_seconds{{{GPU}}}) * 1000"],
            "none", w=12, h=9,
            description="Every occurrence counts, repeats included (gpu_xid_errors_total). "
                        f"Critical codes: {CRITICAL_XIDS.replace('|', ', ')}; 13, 31 and 43 are application faults.",
            transformations=merged_table(["events", "last seen"], only_rows_with_first=True),
            overrides=unit_overrides([("last seen", "dateTimeAsIso")])
            + [{"matcher": {"id": "byName", "options": "events"}, "properties": [{"id": "decimals", "value": 0}]}])
    d.panel("timeseries", "Xid errors over time",
            [(f"sum by (Hostname, gpu, xid) ({xid_increase(GPU, '$__rate_interval')}) > 0",
              "{{Hostname}} GPU {{gpu}} Xid {{xid}}")],
            "none", defaults={"custom": {"drawStyle": "bars", "fillOpacity": 80, "showPoints": "never"}})

    d.row("Memory errors")
    d.panel("timeseries", "ECC errors since the driver was loaded",
            [(per_gpu("accelerator_ecc_uncorrectable_errors_total"), "{{Hostname}} GPU {{gpu}} uncorrectable"),
             (per_gpu_normalized("accelerator_ecc_corrected_errors_total"), "{{Hostname}} GPU {{gpu}} corrected")],
            "none")
    d.panel("table", "Row remapping",
            [per_gpu_normalized("accelerator_remapped_rows_uncorrectable_total"), per_gpu_normalized("accelerator_remapped_rows_correctable_total"),
             per_gpu("accelerator_row_remap_pending"), per_gpu("accelerator_row_remap_failed")],
            "none", description="Rows remapped after uncorrectable / correctable errors; a pending remap needs a GPU reset, a failure needs service.",
            transformations=merged_table(["uncorrectable rows", "correctable rows", "pending", "failed"]))

    d.row("Interconnect errors")
    nvl = [("crc_flit", "CRC flit"), ("crc_data", "CRC data"), ("replay", "replay"), ("recovery", "recovery")]
    d.panel("timeseries", "NVLink errors",
            [(f"sum by (Hostname, gpu) (increase(accelerator_nvlink_errors_total{{{GPU}, error=\"{f}\"}}[$__rate_interval]))",
              "{{Hostname}} GPU {{gpu}} " + n) for f, n in nvl],
            "none", description="Errors per rate interval, all links summed (recommended counters).")
    d.panel("timeseries", "PCIe replays",
            [(per_gpu_normalized("accelerator_pcie_replays_total", agg="sum", over="increase({}[$__rate_interval])"), GPU_LEGEND)],
            "none")
    # Per-GPU link health (every link is read each tick; gpu_nvlink_links_down is always served,
    # gpu_nvlink_errors_total is per GPU by default and per link with --nvlink-links per-link).
    d.panel("stat", "NVLink links down", [f"sum(gpu_nvlink_links_down{{{GPU}}})"], "none", w=4, h=8,
            description="Links NVML reports inactive, on every GPU selected (gpu_nvlink_links_down).",
            defaults=red_at_1)
    d.panel("table", "NVLink links down per GPU",
            [per_gpu("gpu_nvlink_links_down")], "none", w=10, h=8,
            description="One row per GPU with NVLink: its links NVML reports inactive "
                        "(gpu_nvlink_links_down). The status page and gpu-exporter check name the link.",
            transformations=merged_table(["links down"]),
            defaults={"thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "red", "value": 1}]},
                "custom": {"cellOptions": {"type": "color-background"}}})
    d.panel("timeseries", "NVLink errors per GPU, per minute",
            [(f"sum by (Hostname, gpu) (rate(gpu_nvlink_errors_total{{{GPU}}}[$__rate_interval])) * 60",
              GPU_LEGEND)],
            "none", w=10, h=8,
            description="CRC, replay, recovery and ECC errors of the GPU's links per minute "
                        "(gpu_nvlink_errors_total; per link with --nvlink-links per-link); "
                        "GpuNvlinkLinkErrors fires above 1 per minute for 10 minutes.",
            defaults={"decimals": 1})

    d.panel("timeseries", "NVLink bit error rates (NVLink 5)",
            [(f"max by (Hostname, gpu) (gpu_nvlink_effective_bit_error_ratio{{{GPU}}}) > 0",
              GPU_LEGEND + " after FEC"),
             (f"topk(5, max by (Hostname, gpu) (gpu_nvlink_symbol_bit_error_ratio{{{GPU}}}))",
              GPU_LEGEND + " symbol")],
            "sci", w=24, h=8,
            description="GPUs whose worst link's bit error rate after FEC is above 0 "
                        "(gpu_nvlink_effective_bit_error_ratio; GpuNvlinkEffectiveBerHigh fires above 1e-12), "
                        "and the five highest symbol error rates before FEC, which a working link has too. "
                        "B200 and GB200 only.",
            defaults={"custom": {"fillOpacity": 10, "showPoints": "never",
                                 "scaleDistribution": {"type": "log", "log": 10}}})

    d.row("Throttling")
    d.panel("timeseries", "Time held down by temperature and power",
            [(per_gpu_normalized("accelerator_thermal_violation_seconds_total", over="rate({}[$__rate_interval])"),
              "{{Hostname}} GPU {{gpu}} thermal"),
             (per_gpu_normalized("accelerator_power_violation_seconds_total", over="rate({}[$__rate_interval])"),
              "{{Hostname}} GPU {{gpu}} power")],
            "percentunit", description="Share of time the clocks were held down (violation counters).",
            defaults={"min": 0, "max": 1})
    d.panel("timeseries", "Hardware thermal slowdown and power brake",
            [(f"floor({per_gpu('accelerator_clock_event_reasons')} / 64) % 2", "{{Hostname}} GPU {{gpu}} thermal"),
             (f"floor({per_gpu('accelerator_clock_event_reasons')} / 128) % 2", "{{Hostname}} GPU {{gpu}} power brake")],
            "bool_on_off", description="1 while the reason is set.")

    d.row("Devices")
    d.panel("timeseries", "GPU up", [(f"accelerator_up{{{GPU}}}", GPU_LEGEND)], "bool_on_off", w=24,
            description="0 while the driver has lost the GPU.")

    d.row("Exporter")
    d.panel("timeseries", "Targets up", [(f"up{{{EXPORTER_JOB}}}", "{{instance}}")], "bool_on_off")
    d.panel("timeseries", "NVML up", [('gpu_exporter_nvml_up{cluster=~"$cluster"}', "{{instance}}")], "bool_on_off")
    d.panel("timeseries", "Age of the last successful sample",
            [('time() - gpu_exporter_last_sample_success_timestamp_seconds{cluster=~"$cluster"}', "{{instance}}")], "s")
    d.panel("timeseries", "Sampling time per tick",
            [('gpu_exporter_sample_duration_seconds{cluster=~"$cluster"}', "{{instance}}")], "s")
    d.panel("timeseries", "Pod attribution sources up",
            [('gpu_exporter_pod_map_up{cluster=~"$cluster"}', "{{instance}} {{source}}")], "bool_on_off")
    d.panel("table", "Fields not supported",
            [('count by (instance, field) (gpu_exporter_field_unsupported{cluster=~"$cluster"})')], "none",
            description="Configured fields NVML does not support, with the number of devices each; they are left out, not exported as 0.",
            transformations=[{"id": "organize", "options": {"excludeByName": {"Time": True},
                                                            "renameByName": {"Value": "devices"}}}])
    return d


# ---------------------------------------------------------------------------------------
def fleet():
    """Per cluster and per namespace, from the `gpu-exporter.fleet` and `gpu-exporter.namespace`
    recording rules only: no query touches a per-GPU series, so its cost does not grow with
    the fleet (docs/sizing.md has its query time at 1,000 GPUs)."""
    d = Dashboard(
        "gpu-exporter-fleet",
        "GPU fleet",
        "Every cluster at a glance: GPUs, allocation, GPU-equivalents held while idle, and health, per "
        "cluster and per namespace. Reads only the recording rules of alerts/gpu-exporter.rules.yaml "
        "(groups gpu-exporter.fleet and gpu-exporter.namespace), so it stays fast on a fleet-wide "
        "Prometheus, Thanos, Mimir or VictoriaMetrics.",
        [datasource_var(),
         cluster_var("cluster:accelerator_gpus:count"),
         query_var("namespace", "Namespace",
                   'label_values(namespace:accelerator_allocated_gpus:sum{cluster=~"$cluster"}, namespace)')],
        ["gpu", "fleet"],
    )
    cl = 'cluster=~"$cluster"'
    ns = cl + ', namespace=~"$namespace"'
    red_at_1 = {"noValue": "0", "thresholds": {"mode": "absolute", "steps": [
        {"color": "green", "value": None}, {"color": "red", "value": 1}]}}
    orange_at_1 = {"noValue": "0", "thresholds": {"mode": "absolute", "steps": [
        {"color": "green", "value": None}, {"color": "orange", "value": 1}]}}

    def per_cluster(rule):
        return f"sum by (cluster) ({rule}{{{cl}}})"

    d.row("Fleet now")
    d.panel("stat", "GPUs", [f"sum(cluster:accelerator_gpus:count{{{cl}}})"], "none", w=4, h=4,
            description="Physical GPUs the exporters report, working or not.")
    d.panel("stat", "Nodes", [f"sum(cluster:accelerator_nodes:count{{{cl}}})"], "none", w=4, h=4)
    d.panel("gauge", "Devices allocated",
            [f"sum(cluster:accelerator_allocated_devices:sum{{{cl}}}) / sum(cluster:accelerator_allocatable_devices:sum{{{cl}}})"],
            "percentunit", w=4, h=4, description="Device IDs the kubelets have allocated, of those allocatable.",
            defaults={"min": 0, "max": 1})
    d.panel("stat", "GPU-equivalents held but idle", [f"sum(cluster:accelerator_idle_allocated_gpus:sum{{{cl}}})"],
            "none", w=4, h=4, description="Held by pods on devices below 5 % utilization now (MIG instances by size).",
            defaults=orange_at_1 | {"decimals": 2})
    d.panel("stat", "Unhealthy GPUs", [f"sum(cluster:accelerator_unhealthy_gpus:sum{{{cl}}})"], "none", w=4, h=4,
            description="Lost by NVML, or with a critical alert firing.", defaults=red_at_1)
    d.panel("stat", "Exporters down", [f"sum(cluster:accelerator_exporters_down:count{{{cl}}})"], "none", w=4, h=4,
            description="Scrape targets of the GPU exporter job that Prometheus cannot reach: their GPUs are not counted above.",
            defaults=orange_at_1)

    d.row("By cluster")
    cols = [("GPUs", "cluster:accelerator_gpus:count"), ("nodes", "cluster:accelerator_nodes:count"),
            ("unhealthy GPUs", "cluster:accelerator_unhealthy_gpus:sum"),
            ("devices allocatable", "cluster:accelerator_allocatable_devices:sum"),
            ("devices allocated", "cluster:accelerator_allocated_devices:sum"),
            ("GPU-equivalents held", "cluster:accelerator_allocated_gpus:sum"),
            ("GPU-equivalents busy", "cluster:accelerator_busy_gpus:sum"),
            ("held but idle", "cluster:accelerator_idle_allocated_gpus:sum")]
    d.panel("table", "Clusters", [per_cluster(r) for _, r in cols], "none", w=24, h=8,
            description="One row per cluster (an empty cluster when the `cluster` label is not set).",
            transformations=merged_table([n for n, _ in cols]))
    d.panel("timeseries", "GPU-equivalents held, busy and idle, by cluster",
            [(per_cluster("cluster:accelerator_allocated_gpus:sum"), "{{cluster}} held"),
             (per_cluster("cluster:accelerator_busy_gpus:sum"), "{{cluster}} busy"),
             (per_cluster("cluster:accelerator_idle_allocated_gpus:sum"), "{{cluster}} held but idle")], "none")
    d.panel("timeseries", "Unhealthy GPUs and exporters down, by cluster",
            [(per_cluster("cluster:accelerator_unhealthy_gpus:sum"), "{{cluster}} unhealthy GPUs"),
             (per_cluster("cluster:accelerator_exporters_down:count"), "{{cluster}} exporters down")], "none")

    d.row("By namespace")
    ns_cols = [("devices held", "namespace:accelerator_allocated_devices:sum"),
               ("GPU-equivalents held", "namespace:accelerator_allocated_gpus:sum"),
               ("GPU-equivalents busy", "namespace:accelerator_busy_gpus:sum"),
               ("held but idle", "namespace:accelerator_idle_allocated_gpus:sum"),
               ("held on unhealthy GPUs", "namespace:accelerator_unhealthy_gpus:sum"),
               ("utilization", "namespace:accelerator_utilization:ratio")]
    d.panel("table", "Namespaces", [f"sum by (cluster, namespace) ({r}{{{ns}}})" for _, r in ns_cols], "none",
            w=24, h=10, description="Shared devices split among their holders; MIG instances weighted by size.",
            transformations=merged_table([n for n, _ in ns_cols]),
            overrides=unit_overrides([("utilization", "percentunit")]))
    d.panel("timeseries", "GPU-equivalents held but idle, by namespace",
            [(f"namespace:accelerator_idle_allocated_gpus:sum{{{ns}}}", "{{cluster}} {{namespace}}")], "none")
    d.panel("bargauge", "GPU-hours held in the last hour, by namespace",
            [(f"sum by (cluster, namespace) (namespace:accelerator_gpu_hours:increase1h{{{ns}}})",
              "{{cluster}} {{namespace}}")], "h",
            options={"displayMode": "gradient", "orientation": "horizontal"})
    return d


# ---------------------------------------------------------------------------------------
def cost():
    """What the GPUs cost and what is wasted, from the recording rules of the groups
    `gpu-exporter.cost`, `gpu-exporter.namespace` and `gpu-exporter.rightsizing` only, and the
    GPUs' models from accelerator_info (like the fleet overview, no query reads a raw per-GPU
    series). Needs GPU prices: the price rules
    (alerts/gpu-prices.example.rules.yaml) or OpenCost's node_gpu_hourly_cost."""
    d = Dashboard(
        "gpu-exporter-cost",
        "GPU cost and waste",
        "What the GPUs cost an hour and how much of it is wasted: per cluster, team and namespace, "
        "the workloads that waste most, the GPUs no one holds, and the whole GPUs a smaller MIG "
        "instance would do for. A device's cost goes to whoever holds it (a MIG instance is its "
        "share of the GPU, a shared GPU is split among its holders); waste is the idle part of "
        "held devices plus the GPUs no one holds. Reads only the recording rules of "
        "alerts/gpu-exporter.rules.yaml (groups gpu-exporter.cost, gpu-exporter.namespace and "
        "gpu-exporter.rightsizing, and the GPUs' models from accelerator_info), which need GPU prices: price rules "
        "(alerts/gpu-prices.example.rules.yaml) or OpenCost's node_gpu_hourly_cost. "
        "Amounts are in the prices' currency.",
        [datasource_var(),
         cluster_var("cluster:accelerator_cost_dollars_per_hour:sum"),
         query_var("team", "Team",
                   'label_values(team:accelerator_cost_dollars_per_hour:sum{cluster=~"$cluster"}, team)',
                   description="The pods' `team` label (exported with --kubernetes-enable-pod-labels). "
                               "Filters the team panels, the workloads and the right-sizing hints."),
         query_var("namespace", "Namespace",
                   'label_values(namespace:accelerator_cost_dollars_per_hour:sum{cluster=~"$cluster"}, namespace)',
                   description="Filters the namespace panels, the workloads and the right-sizing hints.")],
        ["gpu", "cost"],
    )
    cl = 'cluster=~"$cluster"'
    tm = cl + ', team=~"$team"'
    ns = cl + ', namespace=~"$namespace"'
    # Per holder: `team=~".*"` also matches holders without a team label.
    holder = ns + ', team=~"$team"'
    orange_at_1 = {"noValue": "0", "thresholds": {"mode": "absolute", "steps": [
        {"color": "green", "value": None}, {"color": "orange", "value": 1}]}}
    stacked = {"custom": {"fillOpacity": 30, "showPoints": "never", "stacking": {"mode": "normal", "group": "A"}}}
    bars = {"displayMode": "gradient", "orientation": "horizontal"}

    def total(rule):
        return f"sum({rule}{{{cl}}})"

    d.row("Now")
    d.panel("stat", "GPU cost per hour", [total("cluster:accelerator_cost_dollars_per_hour:sum")], "currencyUSD",
            w=4, h=4,
            description="What every priced GPU of the selected clusters costs an hour, held or not: the sum of "
                        "the GPUs' prices. GPUs without a price are left out.")
    d.panel("stat", "Waste per hour", [total("cluster:accelerator_waste_dollars_per_hour:sum")], "currencyUSD",
            w=4, h=4,
            description="The part of the cost an hour that buys nothing: the idle part of the devices pods "
                        "hold (their cost times 1 − how busy the device is) plus the GPUs no one holds.",
            defaults={"color": {"mode": "fixed", "fixedColor": "orange"}})
    d.panel("gauge", "Share wasted",
            [f"{total('cluster:accelerator_waste_dollars_per_hour:sum')} / {total('cluster:accelerator_cost_dollars_per_hour:sum')}"],
            "percentunit", w=4, h=4,
            description="Waste per hour as a share of the GPUs' cost per hour.",
            defaults={"min": 0, "max": 1, "thresholds": {"mode": "absolute", "steps": [
                {"color": "green", "value": None}, {"color": "orange", "value": 0.3}, {"color": "red", "value": 0.6}]}})
    d.panel("stat", "Held but idle, per hour", [total("namespace:accelerator_waste_dollars_per_hour:sum")],
            "currencyUSD", w=4, h=4,
            description="The waste of the devices pods hold: each holder's cost times 1 − how busy its device is. "
                        "The rest of the waste is the GPUs no one holds.")
    d.panel("stat", "Unallocated GPUs", [total("cluster:accelerator_unallocated_gpus:sum")], "none", w=4, h=4,
            description="GPU-equivalents of working GPUs no container holds: whole GPUs without a holder, and on "
                        "MIG GPUs the slices of instances without a holder or not partitioned at all.",
            defaults=orange_at_1 | {"decimals": 2})
    d.panel("stat", "Unallocated GPUs' cost per hour",
            [total("cluster:accelerator_unallocated_cost_dollars_per_hour:sum")], "currencyUSD", w=4, h=4,
            description="What the unallocated GPU-equivalents cost an hour (their GPUs' prices times the share "
                        "no one holds): part of the waste.")
    d.panel("timeseries", "Cost, waste and unallocated GPUs' cost per hour, by cluster",
            [(f"sum by (cluster) (cluster:accelerator_cost_dollars_per_hour:sum{{{cl}}})", "{{cluster}} cost"),
             (f"sum by (cluster) (cluster:accelerator_waste_dollars_per_hour:sum{{{cl}}})", "{{cluster}} waste"),
             (f"sum by (cluster) (cluster:accelerator_unallocated_cost_dollars_per_hour:sum{{{cl}}})",
              "{{cluster}} unallocated")],
            "currencyUSD", w=24,
            description="Per hour: what the priced GPUs cost, the waste (idle held devices plus unallocated GPUs), "
                        "and the part of the waste that is GPUs no one holds.")

    def breakdown(key, var_sel, held_rule, gpu_hours_rule):
        """A table per team or namespace: cost and waste now and over the last hour and day."""
        cols = [("cost per hour", f"{key}:accelerator_cost_dollars_per_hour:sum"),
                ("waste per hour", f"{key}:accelerator_waste_dollars_per_hour:sum"),
                ("cost, last hour", f"{key}:accelerator_cost_dollars:increase1h"),
                ("waste, last hour", f"{key}:accelerator_waste_dollars:increase1h"),
                ("cost, last 24 h", f"{key}:accelerator_cost_dollars:increase24h"),
                ("waste, last 24 h", f"{key}:accelerator_waste_dollars:increase24h"),
                ("GPU-equivalents held", held_rule),
                ("GPU-hours, last 24 h", gpu_hours_rule)]
        exprs = [f"sum by (cluster, {key}) ({r}{{{var_sel}}})" for _, r in cols]
        share = (f"sum by (cluster, {key}) ({key}:accelerator_waste_dollars:increase24h{{{var_sel}}})"
                 f" / sum by (cluster, {key}) ({key}:accelerator_cost_dollars:increase24h{{{var_sel}}})")
        names = [n for n, _ in cols] + ["wasted, last 24 h"]
        return exprs + [share], names

    for key, title, sel, held_rule in [
            ("team", "team", tm, "team:accelerator_allocated_gpus:sum"),
            ("namespace", "namespace", ns, "namespace:accelerator_allocated_gpus:sum")]:
        d.row(f"By {title}")
        d.panel("timeseries", f"Cost per hour, by {title}",
                [(f"{key}:accelerator_cost_dollars_per_hour:sum{{{sel}}}", "{{cluster}} {{" + key + "}}")],
                "currencyUSD",
                description=f"What the devices each {title}'s pods hold cost an hour, used or not (stacked: the "
                            f"top line is the selected {title}s' total). Shared devices are split among their "
                            "holders; a MIG instance costs its share of the GPU.",
                defaults=stacked)
        d.panel("timeseries", f"Waste per hour, by {title}",
                [(f"{key}:accelerator_waste_dollars_per_hour:sum{{{sel}}}", "{{cluster}} {{" + key + "}}")],
                "currencyUSD",
                description=f"The idle part of each {title}'s cost an hour: each holder's cost times 1 − how busy "
                            "its device is (stacked). GPUs no one holds are in the unallocated panels, not here.",
                defaults=stacked)
        exprs, names = breakdown(key, sel, held_rule, f"{key}:accelerator_gpu_hours:increase24h")
        who = ("Teams are the pods' `team` label; pods without one are in no team. "
               if key == "team" else "")
        d.panel("table", f"{title.capitalize()}s", exprs, "currencyUSD", w=24, h=8,
                description=f"One row per {title}: cost and waste per hour now, amounts over the last hour and "
                            "the last 24 hours (of the time the recording rules ran, when they started later), "
                            "GPU-equivalents held now (MIG instances by size), GPU-hours over the last 24 hours, "
                            f"and the share of the last 24 hours' cost that was wasted. {who}",
                transformations=merged_table(names),
                overrides=unit_overrides([("GPU-equivalents held", "none"), ("GPU-hours, last 24 h", "none"),
                                          ("wasted, last 24 h", "percentunit")]),
                options={"sortBy": [{"displayName": "cost, last 24 h", "desc": True}]})

    d.row("Workloads that waste most")

    def by_workload(rule):
        # Holders with an owning workload, by workload; the others (pods without an owner, and
        # every holder on a node that serves only DCGM's families, which has no workload
        # labels) by pod.
        return (f"sum by (cluster, namespace, workload_kind, workload_name) ({rule}{{{holder}, workload_name!=\"\"}})"
                f" or sum by (cluster, namespace, pod) ({rule}{{{holder}, workload_name=\"\"}})")

    waste = by_workload("allocation:accelerator_waste_dollars_per_hour:attributed")
    cost_ = by_workload("allocation:accelerator_cost_dollars_per_hour:attributed")
    d.panel("table", "Top 10 wasting workloads", [f"topk(10, {waste})", cost_, f"({waste}) / ({cost_})"],
            "currencyUSD", w=24, h=9,
            description="The ten workloads (or pods, where a pod has no owner or its node serves only DCGM's "
                        "families, without workload labels) whose devices are idlest for what they cost: waste "
                        "per hour (cost times 1 − how busy the device is), cost per hour, and the share of the "
                        "cost wasted.",
            transformations=merged_table(["waste per hour", "cost per hour", "wasted"], only_rows_with_first=True),
            overrides=unit_overrides([("wasted", "percentunit")]),
            options={"sortBy": [{"displayName": "waste per hour", "desc": True}]})

    d.row("Unallocated GPUs")
    node_cols = [("unallocated GPU-equivalents", "node:accelerator_unallocated_gpus:sum"),
                 ("unallocated per hour", "node:accelerator_unallocated_cost_dollars_per_hour:sum"),
                 ("all its GPUs per hour", "node:accelerator_price_dollars_per_hour:sum")]
    node_exprs = [f"sum by (cluster, Hostname) ({r}{{{cl}}})" for _, r in node_cols]
    node_exprs[0] += " > 0.001"
    d.panel("table", "Unallocated GPUs per node", node_exprs, "currencyUSD", w=16, h=8,
            description="The nodes with GPUs (or MIG slices) no container holds: the GPU-equivalents no one "
                        "holds, what they cost an hour, and what all the node's GPUs cost an hour.",
            transformations=merged_table([n for n, _ in node_cols], only_rows_with_first=True),
            overrides=unit_overrides([("unallocated GPU-equivalents", "none")]),
            options={"sortBy": [{"displayName": "unallocated per hour", "desc": True}]})
    d.panel("bargauge", "Unallocated GPUs, by model",
            [(f"sum by (cluster, modelName) (gpu:accelerator_unallocated_gpus:ratio{{{cl}}}"
              f" * on (cluster, Hostname, UUID) group_left (modelName) accelerator_info{{{cl}}}) > 0.001",
              "{{cluster}} {{modelName}}")],
            "none", w=8, h=8,
            description="GPU-equivalents no container holds, per GPU model.",
            defaults={"decimals": 2}, options=bars)

    d.row("Right-sizing hints")
    rs_by = "cluster, namespace, pod, container, Hostname, gpu, modelName, fits"
    # The hints with their GPU's model (accelerator_info).
    hint = (f"allocation:accelerator_rightsizing:info{{{holder}}}"
            f" * on (cluster, Hostname, UUID) group_left (modelName) accelerator_info{{{cl}}}")
    joined_hint = f"max by (cluster, UUID, namespace, pod, container, fits, modelName) ({hint})"

    def per_hint(rule):
        return (f"sum by ({rs_by}) ({rule}{{{holder}}}"
                f" * on (cluster, UUID, namespace, pod, container) group_left (fits, modelName) {joined_hint})")

    d.panel("table", "Whole GPUs a MIG instance would do for",
            [f"group by ({rs_by}) ({hint})",
             per_hint("allocation:accelerator_cost_dollars_per_hour:attributed"),
             per_hint("allocation:accelerator_waste_dollars_per_hour:attributed")],
            "currencyUSD", w=24, h=9,
            description="Containers holding a whole GPU of 40 GB or more that, over the last day, used no more "
                        "memory (90 % of the profile's) and compute than a smaller MIG instance gives; `fits` is "
                        "the smallest MIG profile that would have held them. With what the GPU costs them an "
                        "hour and the part of it wasted. Evaluated every 5 minutes.",
            transformations=merged_table(["hint", "cost per hour", "waste per hour"],
                                         hidden=("Time", "Value #A"), only_rows_with_first=True),
            options={"sortBy": [{"displayName": "waste per hour", "desc": True}]})

    d.row("Prices")
    price = f"gpu:accelerator_price_dollars_per_hour:max{{{cl}}}"
    d.panel("table", "GPU prices in use, by model",
            [f"count by (cluster, modelName) ({price})", f"min by (cluster, modelName) ({price})",
             f"max by (cluster, modelName) ({price})", f"sum by (cluster, modelName) ({price})"],
            "currencyUSD", w=24, h=6,
            description="The prices the cost rules apply, per GPU model: the GPUs priced, the lowest and highest "
                        "price of one GPU for an hour (they differ where node pools have prices of their own), "
                        "and what those GPUs cost an hour together. A model missing here has no price, and its "
                        "GPUs count in no cost.",
            transformations=merged_table(["GPUs priced", "lowest price per hour", "highest price per hour",
                                          "all per hour"]),
            overrides=unit_overrides([("GPUs priced", "none")]))
    return d


DASHBOARDS = {"gpu-nodes.json": nodes, "gpu-kubernetes.json": kubernetes, "gpu-health.json": health,
              "gpu-fleet.json": fleet, "gpu-cost.json": cost}


def render(build):
    return json.dumps(build().json(), indent=2, ensure_ascii=False) + "\n"


def main(argv):
    if len(argv) == 3 and argv[1] == "--normalized":
        if argv[2] not in READ_TIME:
            print(f"dashboards/generate.py --normalized: {argv[2]} is not one of {', '.join(READ_TIME)}",
                  file=sys.stderr)
            return 2
        print(normalized(argv[2], sel=""))
        return 0
    check = "--check" in argv[1:]
    stale = []
    for name, build in DASHBOARDS.items():
        path = HERE / name
        text = render(build)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print("dashboards/generate.py --check: out of date: " + ", ".join(stale)
              + " (run python3 dashboards/generate.py and commit the result)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
