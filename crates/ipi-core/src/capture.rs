//! Packet captures: the frames of a classic pcap or pcapng file, and the IP datagram inside
//! each frame. Tests, the lab and `vrrpd watch --pcap` read captures through this one place.
//!
//! Classic pcap is read frame by frame without pcap-file's validation of the snap length: real
//! captures (tcpdump's own test files among them) hold frames longer than the snap length they
//! declare, and those are exactly what a decoder must see.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, TsResolution};
use thiserror::Error;

/// One captured frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// 1-based frame number, as Wireshark counts.
    pub number: usize,
    /// Capture time since the Unix epoch.
    pub timestamp: Duration,
    /// The link-layer type of the interface it was captured on.
    pub link: DataLink,
    /// The bytes as captured.
    pub data: Vec<u8>,
}

impl Frame {
    /// The IP datagram inside the frame; see [`ip_payload`].
    pub fn ip(&self) -> Result<&[u8], CaptureError> {
        ip_payload(self.link, &self.data).map_err(|reason| CaptureError::Frame {
            number: self.number,
            reason,
        })
    }
}

/// Why a capture or one of its frames cannot be read.
#[derive(Debug, Error)]
pub enum CaptureError {
    /// The file cannot be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is neither classic pcap nor pcapng, or is damaged.
    #[error("{path}: not a readable pcap or pcapng capture: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The reader's complaint.
        reason: String,
    },
    /// One frame holds no IP datagram that can be found.
    #[error("frame {number}: {reason}")]
    Frame {
        /// The frame number, from 1.
        number: usize,
        /// Why.
        reason: NotIp,
    },
}

/// Why a link-layer frame holds no IP datagram ([`ip_payload`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NotIp {
    /// An Ethernet frame of another EtherType.
    #[error("EtherType {0:#06x} is not IP")]
    EtherType(u16),
    /// A Linux cooked capture of another protocol.
    #[error("protocol {0:#06x} is not IP")]
    Protocol(u16),
    /// A frame that ends before its protocol type (its length).
    #[error("frame of {0} bytes ends before its protocol type")]
    NoType(usize),
    /// A frame shorter than its link-layer header (its length).
    #[error("frame of {0} bytes is shorter than its header")]
    Short(usize),
    /// A Frame Relay address with no last octet.
    #[error("Frame Relay address never ends")]
    FrameRelayAddress,
    /// A Frame Relay payload that is not IP.
    #[error("Frame Relay payload is not IP")]
    FrameRelayPayload,
    /// A link type this reader does not know.
    #[error("link type {0} is not supported")]
    Link(String),
}

/// Every frame of a capture file, in order.
pub fn read(path: &Path) -> Result<Vec<Frame>, CaptureError> {
    let io = |source| CaptureError::Io {
        path: path.to_path_buf(),
        source,
    };
    let format = |reason: String| CaptureError::Format {
        path: path.to_path_buf(),
        reason,
    };
    let mut file = BufReader::new(File::open(path).map_err(io)?);
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic).map_err(io)?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    if magic == [0x0A, 0x0D, 0x0D, 0x0A] {
        read_pcapng(file).map_err(format)
    } else {
        read_pcap(file).map_err(format)
    }
}

fn read_pcap(file: impl Read) -> Result<Vec<Frame>, String> {
    let mut reader = PcapReader::new(file).map_err(|e| e.to_string())?;
    let header = reader.header();
    let frac = match header.ts_resolution {
        TsResolution::MicroSecond => 1_000,
        TsResolution::NanoSecond => 1,
    };
    let mut frames = Vec::new();
    while let Some(packet) = reader.next_raw_packet() {
        let packet = packet.map_err(|e| format!("frame {}: {e}", frames.len() + 1))?;
        frames.push(Frame {
            number: frames.len() + 1,
            timestamp: Duration::from_secs(u64::from(packet.ts_sec))
                + Duration::from_nanos(u64::from(packet.ts_frac) * frac),
            link: header.datalink,
            data: Cow::into_owned(packet.data),
        });
    }
    Ok(frames)
}

fn read_pcapng(file: impl Read) -> Result<Vec<Frame>, String> {
    let mut reader = PcapNgReader::new(file).map_err(|e| e.to_string())?;
    let mut links = Vec::new();
    let mut frames = Vec::new();
    while let Some(block) = reader.next_block() {
        let number = frames.len() + 1;
        let (interface, timestamp, data) = match block.map_err(|e| format!("block: {e}"))? {
            Block::InterfaceDescription(idb) => {
                links.push(idb.linktype);
                continue;
            }
            Block::EnhancedPacket(epb) => (epb.interface_id as usize, epb.timestamp, epb.data),
            Block::SimplePacket(spb) => (0, Duration::ZERO, spb.data),
            // The obsolete Packet Block: microseconds unless the interface says otherwise.
            Block::Packet(pb) => (
                usize::from(pb.interface_id),
                Duration::from_micros(pb.timestamp),
                pb.data,
            ),
            _ => continue,
        };
        let link = *links
            .get(interface)
            .ok_or_else(|| format!("frame {number}: interface {interface} is not described"))?;
        frames.push(Frame {
            number,
            timestamp,
            link,
            data: Cow::into_owned(data),
        });
    }
    Ok(frames)
}

/// The IP datagram inside one link-layer frame: Ethernet (with 802.1Q / 802.1ad tags), Linux
/// cooked captures (v1 and v2, what `tcpdump -i any` writes), raw IP, and Frame Relay.
pub fn ip_payload(link: DataLink, frame: &[u8]) -> Result<&[u8], NotIp> {
    match link {
        // Destination, source, then an EtherType; 802.1Q (0x8100) and 802.1ad (0x88A8) tags
        // put 4 bytes (TPID, TCI) before the real EtherType.
        DataLink::ETHERNET => {
            let mut at = 12;
            loop {
                match ethertype(frame, at)? {
                    0x8100 | 0x88A8 => at += 4,
                    0x0800 | 0x86DD => return Ok(&frame[at + 2..]),
                    other => return Err(NotIp::EtherType(other)),
                }
            }
        }
        // SLL: 16-byte header, protocol at 14. SLL2: 20-byte header, protocol at 0.
        DataLink::LINUX_SLL => ip_after(frame, ethertype(frame, 14)?, 16),
        DataLink::LINUX_SLL2 => ip_after(frame, ethertype(frame, 0)?, 20),
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Ok(frame),
        // Q.922 address octets up to the one with the EA bit set, then either Q.933 UI (0x03)
        // and an NLPID (0xCC IPv4, 0x8E IPv6), or a Cisco-style EtherType.
        DataLink::FRELAY => {
            let address_len = frame
                .iter()
                .position(|b| b & 1 == 1)
                .ok_or(NotIp::FrameRelayAddress)?
                + 1;
            match &frame[address_len..] {
                [0x03, 0xCC | 0x8E, ip @ ..] => Ok(ip),
                [0x08, 0x00, ip @ ..] | [0x86, 0xDD, ip @ ..] => Ok(ip),
                _ => Err(NotIp::FrameRelayPayload),
            }
        }
        other => Err(NotIp::Link(format!("{other:?}"))),
    }
}

fn ethertype(frame: &[u8], at: usize) -> Result<u16, NotIp> {
    match frame.get(at..at + 2) {
        Some(&[hi, lo]) => Ok(u16::from_be_bytes([hi, lo])),
        _ => Err(NotIp::NoType(frame.len())),
    }
}

fn ip_after(frame: &[u8], protocol: u16, header: usize) -> Result<&[u8], NotIp> {
    match protocol {
        0x0800 | 0x86DD => frame.get(header..).ok_or(NotIp::Short(frame.len())),
        other => Err(NotIp::Protocol(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_with_a_vlan_tag() {
        let mut frame = vec![0u8; 12];
        frame.extend([0x81, 0x00, 0x00, 0x05, 0x08, 0x00, 0x45]);
        assert_eq!(ip_payload(DataLink::ETHERNET, &frame), Ok(&[0x45u8][..]));
    }

    #[test]
    fn linux_cooked_v1_and_v2() {
        let mut sll = vec![0u8; 14];
        sll.extend([0x86, 0xDD, 0x60]);
        assert_eq!(ip_payload(DataLink::LINUX_SLL, &sll), Ok(&[0x60u8][..]));
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend([0u8; 18]);
        sll2.push(0x45);
        assert_eq!(ip_payload(DataLink::LINUX_SLL2, &sll2), Ok(&[0x45u8][..]));
    }

    #[test]
    fn non_ip_and_short_frames_are_named() {
        let mut arp = vec![0u8; 12];
        arp.extend([0x08, 0x06]);
        let not_ip = ip_payload(DataLink::ETHERNET, &arp).unwrap_err();
        assert_eq!(not_ip.to_string(), "EtherType 0x0806 is not IP");
        assert!(ip_payload(DataLink::ETHERNET, &[0; 5])
            .unwrap_err()
            .to_string()
            .contains("5 bytes"));
    }

    #[test]
    fn a_file_that_is_not_a_capture_is_a_format_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pcap");
        std::fs::write(&path, b"not a capture at all").unwrap();
        let err = read(&path).unwrap_err();
        assert!(matches!(err, CaptureError::Format { .. }), "{err}");
        assert!(err.to_string().starts_with(&path.display().to_string()));
    }
}
