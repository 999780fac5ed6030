//! The event counters' increment vector: each engine's named pulse on the bit of its counter,
//! every bit position from [`rnic_contract::regs::counter`].
use rnic_contract::regs::counter;
use rust_hdl::prelude::*;

/// Declares [`CounterStrobes`]: one input pulse per event counter, named after it, and the
/// constant one-hot mask of its counter index.
macro_rules! counter_strobes {
    ($($pulse:ident / $mask:ident = $index:path),* $(,)?) => {
        /// Gathers the engines' counter pulses into [`crate::regs::BarRegs`]' `count_inc`: the
        /// pulse named after a counter sets bit [`rnic_contract::regs::counter`]`::<NAME>`, so
        /// no bit position is written in the RTL. Combinational (each output bit is one input),
        /// 0 cycles; `BarRegs` registers the vector before any counter's adder.
        #[derive(LogicBlock)]
        pub struct CounterStrobes {
            $(
                #[doc = concat!("One cycle per event of counter `", stringify!($index), "`.")]
                pub $pulse: Signal<In, Bit>,
            )*
            /// Bit `i` set: counter `i` counts one this cycle.
            pub inc: Signal<Out, Bits<32>>,
            $( $mask: Constant<Bits<32>>, )*
        }

        impl Default for CounterStrobes {
            fn default() -> Self {
                Self {
                    $( $pulse: Default::default(), )*
                    inc: Default::default(),
                    $( $mask: Constant::new((1_u64 << $index).to_bits()), )*
                }
            }
        }

        impl Logic for CounterStrobes {
            #[hdl_gen]
            fn update(&mut self) {
                self.inc.next = 0.into();
                $(
                    if self.$pulse.val() {
                        self.inc.next = self.inc.val() | self.$mask.val();
                    }
                )*
            }
        }

        /// Every event counter has its input (checked at compile time).
        const _: () = assert!([$($index),*].len() == counter::EVENTS as usize);
    };
}

counter_strobes!(
    rx_frames / k_rx_frames = counter::RX_FRAMES,
    tx_frames / k_tx_frames = counter::TX_FRAMES,
    rx_roce_ok / k_rx_roce_ok = counter::RX_ROCE_OK,
    drop_icrc / k_drop_icrc = counter::DROP_ICRC,
    drop_malformed / k_drop_malformed = counter::DROP_MALFORMED,
    drop_unknown_qp / k_drop_unknown_qp = counter::DROP_UNKNOWN_QP,
    drop_key / k_drop_key = counter::DROP_KEY,
    drop_psn / k_drop_psn = counter::DROP_PSN,
    drop_rx_overflow / k_drop_rx_overflow = counter::DROP_RX_OVERFLOW,
    tx_acks / k_tx_acks = counter::TX_ACKS,
    tx_naks / k_tx_naks = counter::TX_NAKS,
    rx_acks / k_rx_acks = counter::RX_ACKS,
    cqes / k_cqes = counter::CQES,
    tx_requests / k_tx_requests = counter::TX_REQUESTS,
    local_errors / k_local_errors = counter::LOCAL_ERRORS,
    drop_inv_req / k_drop_inv_req = counter::DROP_INV_REQ,
    rx_duplicates / k_rx_duplicates = counter::RX_DUPLICATES,
    retransmits / k_retransmits = counter::RETRANSMITS,
    timeouts / k_timeouts = counter::TIMEOUTS,
    tx_nak_seq / k_tx_nak_seq = counter::TX_NAK_SEQ,
    rx_nak_seq / k_rx_nak_seq = counter::RX_NAK_SEQ,
    rx_nak_inv_req / k_rx_nak_inv_req = counter::RX_NAK_INV_REQ,
    rx_nak_rem_access / k_rx_nak_rem_access = counter::RX_NAK_REM_ACCESS,
    rx_nak_rem_op / k_rx_nak_rem_op = counter::RX_NAK_REM_OP,
    tx_rnr_naks / k_tx_rnr_naks = counter::TX_RNR_NAKS,
    rx_rnr_naks / k_rx_rnr_naks = counter::RX_RNR_NAKS,
    drop_no_rwqe / k_drop_no_rwqe = counter::DROP_NO_RWQE,
    drop_raw / k_drop_raw = counter::DROP_RAW,
    drop_cq_overrun / k_drop_cq_overrun = counter::DROP_CQ_OVERRUN,
);
