//! The wire encoding: every kind round-trips, and bad bytes are errors.

use super::*;

fn every_kind() -> Vec<Message> {
    let txn = Txn {
        zxid: make_zxid(2, 7),
        data: b"create /a".to_vec(),
    };
    vec![
        Message::Notification(Notification {
            vote: Vote {
                leader: 3,
                zxid: make_zxid(1, 4),
                peer_epoch: 1,
            },
            election_epoch: 9,
            state: PeerState::Following,
        }),
        Message::FollowerInfo {
            attempt: 4,
            accepted_epoch: 2,
            last_zxid: 77,
        },
        Message::LeaderInfo {
            attempt: 4,
            epoch: 3,
        },
        Message::AckEpoch {
            attempt: 4,
            epoch: 3,
            current_epoch: Some(2),
            last_zxid: make_zxid(2, 7),
            epoch_ends: vec![make_zxid(1, 4), make_zxid(2, 7)],
        },
        Message::AckEpoch {
            attempt: 4,
            epoch: 3,
            current_epoch: None,
            last_zxid: 0,
            epoch_ends: Vec::new(),
        },
        Message::Sync {
            attempt: 4,
            epoch: 3,
            mode: SyncMode::Trunc,
            trunc_to: make_zxid(1, 4),
            txns: vec![
                txn.clone(),
                Txn {
                    zxid: make_zxid(2, 8),
                    data: Vec::new(),
                },
            ],
            commit: make_zxid(1, 4),
        },
        Message::AckNewLeader {
            attempt: 4,
            epoch: 3,
            last_zxid: 8,
        },
        Message::UpToDate {
            attempt: 4,
            epoch: 3,
            commit: 5,
        },
        Message::Propose {
            attempt: 4,
            epoch: 3,
            prev: make_zxid(2, 6),
            txn,
            commit: 1,
        },
        Message::Ack {
            attempt: 4,
            epoch: 3,
            last_zxid: 9,
        },
        Message::Commit {
            attempt: 4,
            epoch: 3,
            zxid: 9,
        },
        Message::Ping {
            attempt: 4,
            epoch: 3,
            commit: 9,
        },
        Message::SyncRequest {
            attempt: 4,
            epoch: 3,
            id: 11,
        },
        Message::SyncReply {
            attempt: 4,
            epoch: 3,
            id: 11,
            zxid: 12,
        },
    ]
}

#[test]
fn every_message_kind_round_trips_through_bytes() {
    for message in every_kind() {
        assert_eq!(Message::decode(&message.encode()), Ok(message));
    }
}

#[test]
fn every_cut_short_message_is_an_error() {
    for message in every_kind() {
        let bytes = message.encode();
        for len in 0..bytes.len() {
            assert!(
                Message::decode(&bytes[..len]).is_err(),
                "{message:?} cut at {len}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Message::decode(&longer), Err(DecodeError::TrailingBytes(1)));
    }
}

#[test]
fn bad_kinds_values_and_lengths_are_errors() {
    assert_eq!(Message::decode(&[]), Err(DecodeError::Empty));
    assert_eq!(Message::decode(&[200]), Err(DecodeError::UnknownKind(200)));
    let mut bad_state = every_kind()[0].encode();
    *bad_state.last_mut().unwrap() = 9;
    assert_eq!(
        Message::decode(&bad_state),
        Err(DecodeError::BadValue("peer state"))
    );
    // A SYNC that claims four billion transactions in a few bytes.
    let mut huge = vec![4];
    huge.extend_from_slice(&[0; 16]);
    huge.push(0);
    huge.extend_from_slice(&[0; 8]);
    huge.extend_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(Message::decode(&huge), Err(DecodeError::Truncated));
}

#[test]
fn zxids_are_an_epoch_and_a_counter() {
    let zxid = make_zxid(5, 1);
    assert_eq!(zxid, 0x0000_0005_0000_0001);
    assert_eq!((epoch_of(zxid), counter_of(zxid)), (5, 1));
}
