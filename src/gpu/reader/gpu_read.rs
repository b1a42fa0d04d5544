//! One GPU's read in one tick ([`GpuRead`]), step by step: its fabric registration, its MIG
//! instances, the label rows, each selected entity's values (the physical GPU, then its MIG
//! instances, with `--mig-repeat-device-fields` copying device values onto them), its
//! processes, and its NVLink links and fabric. The reader's `read_gpu` runs the steps in that
//! order and decides what the GPU gives the tick; a step that finds the GPU lost says so.
//!
//! It reads NVML for one GPU and records failures in the `book`; it must not decide the
//! GPU's status or touch another GPU's state.

use std::collections::HashMap;

use nvml_wrapper::Device;
use nvml_wrapper::error::NvmlError;

use super::book::{self, Book, Place};
use super::entities::enumerate_mig;
use super::state::{EntityState, GpuState};
use super::values::{Ctx, read_rows, read_text_field};
use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::catalogue::{FieldDef, Getter, Level, LinkPart, TextKind};
use crate::gpu::nvlink::{self, LinkReader};
use crate::gpu::processes::{self, EntityProcesses};
use crate::snapshot::{EntityId, EntitySample, Fabric, Interconnect, MigIdentity, Value};

/// The GPU fell off the bus (`NVML_ERROR_GPU_IS_LOST`) before its entities were known.
pub(super) struct GpuLost;

/// A GPU's MIG devices with their identities, by GPU instance id.
pub(super) type Migs = Vec<(Device<'static>, MigIdentity)>;

/// One GPU's read in one tick: what its steps share (the reader's state it reads and
/// updates, and whether the GPU fell off meanwhile).
pub(super) struct GpuRead<'a> {
    pub(super) ctx: Ctx<'a>,
    pub(super) dev: Device<'static>,
    /// The physical GPU's UUID.
    pub(super) uuid: &'a str,
    pub(super) index: u32,
    pub(super) state: &'a mut GpuState,
    pub(super) book: &'a mut Book,
    pub(super) entities: &'a mut HashMap<String, EntityState>,
    pub(super) links: &'a mut LinkReader,
    pub(super) system_texts: &'a mut HashMap<TextKind, Result<String, NvmlError>>,
    /// The GPU fell off mid-read: everything it gave this tick is dropped.
    pub(super) lost: bool,
}

impl GpuRead<'_> {
    /// The physical GPU's place, where its unsupported fields are remembered under `key`.
    fn place<'k>(&self, key: &'k str) -> Place<'k>
    where
        Self: 'k,
    {
        Place {
            key,
            uuid: self.uuid,
            gpu: self.index,
            gi: None,
        }
    }

    /// The fabric registration, once for this tick: every fabric field, label and family of
    /// the GPU comes from this read (kept in the GPU's state for the fields and labels).
    pub(super) fn fabric(&mut self) -> Result<Result<Fabric, NvmlError>, GpuLost> {
        let fabric = nvlink::fabric(self.ctx.nvml, &self.dev);
        if matches!(fabric, Err(NvmlError::GpuLost)) {
            return Err(GpuLost);
        }
        let now = match &fabric {
            Ok(f) => Ok(f.clone()),
            Err(e) => Err(book::clone_err(e)),
        };
        self.state.fabric = Some(fabric);
        Ok(now)
    }

    /// The MIG instances when the GPU is in MIG mode (none listed when listing them failed);
    /// `None` outside MIG mode.
    pub(super) fn migs(&mut self) -> Result<Option<Migs>, GpuLost> {
        match self.dev.mig_mode() {
            Ok(m) if m.current == 1 => match enumerate_mig(self.ctx.nvml, &self.dev) {
                Ok(v) => Ok(Some(v)),
                Err(NvmlError::GpuLost) => Err(GpuLost),
                Err(e) => {
                    let what = "listing MIG instances";
                    self.book
                        .failed("mig_enumeration", self.uuid, self.index, what, &e);
                    Ok(Some(Vec::new()))
                }
            },
            Err(NvmlError::GpuLost) => Err(GpuLost),
            _ => Ok(None),
        }
    }

    /// The label rows, read on the physical GPU (and repeated on its instances).
    pub(super) fn labels(&mut self, counters: &CounterSet) -> Vec<Option<String>> {
        let at = self.place(self.uuid);
        counters
            .labels()
            .map(|row| {
                if self.book.is_unsupported(at.key, row.field) {
                    return None;
                }
                let r = read_text_field(
                    self.ctx.nvml,
                    &self.dev,
                    row.field,
                    self.state,
                    self.system_texts,
                );
                self.book.settle(&at, row.field, &mut self.lost, r)
            })
            .collect()
    }

    /// The rows `wanted` accepts, read on the entity `dev` (a MIG device of `parent`, the
    /// physical GPU and the GPU instance id, or the physical GPU itself) whose state is kept
    /// under `key`, at `at`.
    fn values(
        &mut self,
        dev: Option<&Device<'static>>,
        key: &str,
        at: &Place<'_>,
        rows: &[&CounterRow],
        wanted: &dyn Fn(&FieldDef) -> bool,
    ) -> Vec<Option<Value>> {
        let (dev, parent) = match dev {
            Some(mig) => (mig, at.gi.map(|gi| (&self.dev, gi))),
            None => (&self.dev, None),
        };
        read_rows(
            &self.ctx,
            dev,
            parent,
            at,
            rows,
            wanted,
            self.state,
            self.entities.entry(key.to_owned()).or_default(),
            self.book,
            &mut self.lost,
        )
    }

    /// The selected entities of the GPU with their values: the physical GPU (`base`), and
    /// each MIG instance of `migs`, with the physical GPU's device-level values copied onto
    /// them under `--mig-repeat-device-fields`.
    pub(super) fn entities(
        &mut self,
        base: EntityId,
        rows: &[&CounterRow],
        migs: Option<&[(Device<'static>, MigIdentity)]>,
        labels: Vec<Option<String>>,
    ) -> Vec<EntitySample> {
        let (index, uuid) = (self.index, self.uuid);
        let sel = &self.ctx.opts.devices;
        let (wants_gpu, repeat) = (
            sel.wants_gpu(index),
            self.ctx.opts.mig_repeat_device_fields && migs.is_some(),
        );
        // What a GPU supports depends on its MIG mode (utilization is not served in MIG
        // mode), so the unsupported-field memory is kept per mode.
        let phys_key = if migs.is_some() {
            format!("{uuid}/mig")
        } else {
            uuid.to_owned()
        };
        // The physical GPU's own series, also read when its values are repeated on instances.
        let phys_values = (wants_gpu || repeat).then(|| {
            let phys_rows = |f: &FieldDef| {
                f.level == Level::Device || (f.level == Level::Instance && migs.is_none())
            };
            self.values(None, uuid, &self.place(&phys_key), rows, &phys_rows)
        });

        let mut entities = Vec::new();
        for (mig_dev, mig) in migs.into_iter().flatten() {
            if !self
                .ctx
                .opts
                .devices
                .wants_instance(index, mig.gpu_instance_id)
            {
                continue;
            }
            let inst_rows = |f: &FieldDef| f.level == Level::Instance;
            let at = Place {
                key: &mig.uuid,
                uuid,
                gpu: index,
                gi: Some(mig.gpu_instance_id),
            };
            let mut values = self.values(Some(mig_dev), &mig.uuid, &at, rows, &inst_rows);
            if repeat && let Some(phys) = &phys_values {
                for ((slot, row), v) in rows.iter().enumerate().zip(phys) {
                    if row.field.level == Level::Device
                        && let Some(dst) = values.get_mut(slot)
                    {
                        *dst = v.clone();
                    }
                }
            }
            let mut id = base.clone();
            id.mig = Some(mig.clone());
            entities.push(EntitySample {
                id,
                values,
                labels: labels.clone(),
            });
        }
        if let Some(values) = phys_values.filter(|_| wants_gpu && !repeat) {
            entities.insert(
                0,
                EntitySample {
                    id: base,
                    values,
                    labels,
                },
            );
        }
        entities
    }

    /// The processes of each selected entity of the GPU, into `out`.
    pub(super) fn processes(
        &mut self,
        migs: Option<&[(Device<'static>, MigIdentity)]>,
        out: &mut Vec<EntityProcesses>,
    ) {
        let (index, uuid) = (self.index, self.uuid);
        let sel = &self.ctx.opts.devices;
        let mut procs = Vec::new();
        if migs.is_none() && sel.wants_gpu(index) {
            procs.push(processes::read(
                &self.dev,
                uuid,
                Some(&mut self.state.proc_util_seen),
            ));
        }
        for (mig_dev, mig) in migs.into_iter().flatten() {
            if sel.wants_instance(index, mig.gpu_instance_id) {
                procs.push(processes::read(mig_dev, &mig.uuid, None));
            }
        }
        for p in procs {
            match p {
                Ok(p) => out.push(p),
                Err(NvmlError::GpuLost) => self.lost = true,
                Err(e) => {
                    let what = "listing processes";
                    self.book.failed("processes", uuid, index, what, &e);
                }
            }
        }
    }

    /// The GPU's NVLink links and its fabric registration (`fabric`, this tick's read), as
    /// entity `id`; `None` when it has neither. Every link's state and error counters are
    /// read every tick, whatever --nvlink-links says (the status page, `check`, the health
    /// model and gpu_nvlink_links_down need them); the data counters only for series that
    /// use them. On a board without NVLink the link-entity rows are listed as unsupported.
    pub(super) fn interconnect(
        &mut self,
        id: EntityId,
        rows: &[&CounterRow],
        fabric: Result<Fabric, NvmlError>,
    ) -> Option<Interconnect> {
        let link_rows = || rows.iter().filter(|r| r.field.level == Level::Link);
        let throughput = self.ctx.opts.nvlink_throughput
            || link_rows().any(|r| {
                matches!(
                    r.field.getter,
                    Getter::Link(LinkPart::Throughput | LinkPart::Transmit | LinkPart::Receive)
                )
            });
        let read = self.links_and_fabric(id, fabric, throughput);
        if self.links.has_no_links(self.uuid) {
            let at = self.place(self.uuid);
            for row in link_rows() {
                self.book
                    .mark_unsupported(&at, row.field, "the GPU has no NVLink link");
            }
        }
        read
    }

    /// The GPU's NVLink links (all of them; their data counters with `throughput`) and its
    /// fabric registration; `None` when it has neither. Sets `lost` when the GPU fell off
    /// meanwhile.
    fn links_and_fabric(
        &mut self,
        id: EntityId,
        fabric: Result<Fabric, NvmlError>,
        throughput: bool,
    ) -> Option<Interconnect> {
        let (index, uuid) = (self.index, self.uuid);
        let mut links = Vec::new();
        match self.links.read(self.ctx.nvml, &self.dev, uuid, throughput) {
            Ok(r) => {
                links = r.links;
                for (step, e) in r.failures {
                    self.book
                        .failed(step, uuid, index, "reading NVLink links", &e);
                }
            }
            Err(NvmlError::GpuLost) => {
                self.lost = true;
                return None;
            }
            Err(e) => self
                .book
                .failed("nvlink_state", uuid, index, "reading NVLink links", &e),
        }
        let fabric = match fabric {
            Ok(f) if f.state != 0 => Some(f),
            Ok(_) => None,
            Err(e) if nvlink::is_absent(&e) => None,
            Err(e) => {
                let what = "reading the fabric registration";
                self.book.failed("fabric_info", uuid, index, what, &e);
                None
            }
        };
        (!links.is_empty() || fabric.is_some()).then_some(Interconnect { id, links, fabric })
    }
}
