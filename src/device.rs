//! Where a tensor's memory lives.

use crate::{Result, bail};
use dlpark::ffi::{DLDevice, DLDeviceType};

/// The kinds of memory dlbridge knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// Host memory (DLPack's `kCPU`).
    Cpu,
    /// CUDA device memory (DLPack's `kDLCUDA`).
    Cuda,
}

impl DeviceKind {
    /// PyTorch's name for this kind: `device.type`, and the suffix of its
    /// kernel names in messages (`"add_cpu" not implemented for ...`).
    pub const fn name(self) -> &'static str {
        match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
        }
    }
}

/// A device as PyTorch spells it: a kind and, for CUDA, an optional index
/// (`cuda` means "the current device" until a tensor is placed).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// The kind of memory.
    pub kind: DeviceKind,
    /// The CUDA device's index; `None` for the host, and for `cuda` without one.
    pub index: Option<u32>,
}

impl Device {
    /// The host.
    ///
    /// ```
    /// use dlbridge::Device;
    /// assert!(Device::CPU.is_cpu());
    /// assert_eq!(Device::parse("cuda:1")?, Device::cuda(Some(1)));
    /// assert_eq!(Device::cuda(Some(1)).to_string(), "cuda:1");
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub const CPU: Device = Device {
        kind: DeviceKind::Cpu,
        index: None,
    };

    /// A CUDA device: `cuda:index`, or `cuda` (the current one, `cuda:0`) for `None`.
    pub fn cuda(index: Option<u32>) -> Device {
        Device {
            kind: DeviceKind::Cuda,
            index,
        }
    }

    /// Whether this is host memory.
    pub fn is_cpu(self) -> bool {
        self.kind == DeviceKind::Cpu
    }

    /// The pair with the host last: the first is the device that moves
    /// data between the two (the host never does), and the one PyTorch
    /// names first when they differ. Two accelerators keep their order.
    pub fn host_last(a: Device, b: Device) -> (Device, Device) {
        if a.is_cpu() { (b, a) } else { (a, b) }
    }

    /// Parses `cpu`, `cpu:0`, `cuda`, `cuda:1` (PyTorch's grammar:
    /// `[a-zA-Z_]+(:(0|[1-9][0-9]*))?`).
    ///
    /// ```
    /// use dlbridge::{Device, DeviceKind};
    /// assert_eq!(Device::parse("cuda")?.kind, DeviceKind::Cuda);
    /// assert!(Device::parse("cuda:01").is_err());
    /// let dl = Device::cuda(Some(2)).to_dlpack();
    /// assert_eq!((dl.device_type, dl.device_id), (dlbridge::ffi::DLDeviceType::CUDA, 2));
    /// assert_eq!(Device::from_dlpack(dl)?, Device::cuda(Some(2)));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn parse(spec: &str) -> Result<Device> {
        let invalid = || crate::err!(InvalidOperation, "Invalid device string: '{spec}'");
        let (kind, index) = match spec.split_once(':') {
            Some((kind, index)) => (kind, Some(index)),
            None => (spec, None),
        };
        if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphabetic() || c == '_') {
            return Err(invalid());
        }
        let index = match index {
            None => None,
            Some(text) => {
                let digits = !text.is_empty() && text.chars().all(|c| c.is_ascii_digit());
                if !digits || (text.len() > 1 && text.starts_with('0')) {
                    return Err(invalid());
                }
                Some(text.parse::<u32>().map_err(|_| invalid())?)
            }
        };
        match kind {
            "cpu" => match index {
                None | Some(0) => Ok(Device {
                    kind: DeviceKind::Cpu,
                    index,
                }),
                Some(i) => bail!(
                    InvalidOperation,
                    "CPU device index must be -1 or zero, got {i}"
                ),
            },
            "cuda" => Ok(Device::cuda(index)),
            _ => bail!(
                InvalidOperation,
                "Expected one of cpu, cuda device type at start of device string: {spec}"
            ),
        }
    }

    /// The device memory actually lives on: `cpu:0` is the CPU.
    pub fn canonical(self) -> Device {
        if self.is_cpu() { Device::CPU } else { self }
    }

    /// The DLPack `(device_type, device_id)` of this device.
    pub fn to_dlpack(self) -> DLDevice {
        match self.kind {
            DeviceKind::Cpu => DLDevice {
                device_type: DLDeviceType::CPU,
                device_id: 0,
            },
            DeviceKind::Cuda => DLDevice {
                device_type: DLDeviceType::CUDA,
                device_id: self.index.unwrap_or(0) as i32,
            },
        }
    }

    /// Maps a DLPack device onto a dlbridge one. Pinned host memory is host
    /// memory: the CPU can read it directly.
    pub fn from_dlpack(dev: DLDevice) -> Result<Device> {
        match dev.device_type {
            DLDeviceType::CPU | DLDeviceType::CUDAHOST => Ok(Device::CPU),
            DLDeviceType::CUDA | DLDeviceType::CUDAMANAGED if dev.device_id >= 0 => {
                Ok(Device::cuda(Some(dev.device_id as u32)))
            }
            other => Err(crate::err!(
                UnsupportedDevice,
                "unsupported DLPack device (type={}, id={}); dlbridge supports CPU (1), CUDA (2), \
                 CUDA host (3) and CUDA managed (13) memory",
                other.0,
                dev.device_id
            )),
        }
    }
}

impl std::fmt::Display for Device {
    /// `cpu`, `cuda`, `cuda:0`: the form used in PyTorch's messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.index {
            None => write!(f, "{}", self.kind.name()),
            Some(i) => write!(f, "{}:{i}", self.kind.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_torch_spellings() {
        assert_eq!(Device::parse("cpu").unwrap(), Device::CPU);
        assert_eq!(Device::parse("cuda").unwrap(), Device::cuda(None));
        assert_eq!(Device::parse("cuda:1").unwrap(), Device::cuda(Some(1)));
        assert!(Device::parse("cuda:x").is_err());
        assert!(Device::parse("cuda:-1").is_err());
        assert!(Device::parse("cuda0").is_err());
        assert_eq!(Device::parse("cpu:0").unwrap().canonical(), Device::CPU);
        assert!(Device::parse("tpu").is_err());
        assert_eq!(Device::cuda(Some(0)).to_string(), "cuda:0");
    }

    #[test]
    fn dlpack_devices_map_both_ways() {
        let d = Device::cuda(Some(2));
        assert_eq!(Device::from_dlpack(d.to_dlpack()).unwrap(), d);
        let host = DLDevice {
            device_type: DLDeviceType::CUDAHOST,
            device_id: 0,
        };
        assert_eq!(Device::from_dlpack(host).unwrap(), Device::CPU);
        let metal = DLDevice {
            device_type: DLDeviceType::METAL,
            device_id: 0,
        };
        assert!(Device::from_dlpack(metal).is_err());
    }
}
