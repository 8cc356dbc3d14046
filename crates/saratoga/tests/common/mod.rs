//! Frames written by hand, shared by the tests that feed an engine what a
//! peer sends.

use scps_saratoga::wire::{Data, Descriptor, Frame, TransferType};

/// A DATA frame of a file, in `descriptor`'s width, as the peers of the
/// drafts' era send every one: asking for no STATUS, not marked as the
/// end, without a timestamp.
pub fn data_frame_in(descriptor: Descriptor, session: u32, offset: u64, payload: &[u8]) -> Vec<u8> {
    let data = Data {
        descriptor,
        transfer_type: TransferType::File,
        request_status: false,
        end_of_data: false,
        session,
        timestamp: None,
        offset,
        payload,
    };
    Frame::Data(data).to_bytes().unwrap()
}
