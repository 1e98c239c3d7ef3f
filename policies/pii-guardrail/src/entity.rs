//! The kinds of personal data the guardrail knows, their names on the wire and their placeholders.

use std::fmt;
use std::ops::Range;

/// One kind of personal data. The order here is the order kinds are reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityKind {
    Email,
    Phone,
    CreditCard,
    Iban,
    IpAddress,
    SaudiId,
    EmiratesId,
    EgyptianId,
    UsSsn,
}

impl EntityKind {
    pub const ALL: [EntityKind; 9] = [
        EntityKind::Email,
        EntityKind::Phone,
        EntityKind::CreditCard,
        EntityKind::Iban,
        EntityKind::IpAddress,
        EntityKind::SaudiId,
        EntityKind::EmiratesId,
        EntityKind::EgyptianId,
        EntityKind::UsSsn,
    ];

    /// The name used in the WIT verdict, settings and events.
    pub fn name(self) -> &'static str {
        match self {
            EntityKind::Email => "email",
            EntityKind::Phone => "phone",
            EntityKind::CreditCard => "credit_card",
            EntityKind::Iban => "iban",
            EntityKind::IpAddress => "ip_address",
            EntityKind::SaudiId => "saudi_id",
            EntityKind::EmiratesId => "emirates_id",
            EntityKind::EgyptianId => "egyptian_id",
            EntityKind::UsSsn => "us_ssn",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What a redacted value is replaced with.
    pub fn placeholder(self) -> &'static str {
        match self {
            EntityKind::Email => "[EMAIL]",
            EntityKind::Phone => "[PHONE]",
            EntityKind::CreditCard => "[CARD]",
            EntityKind::Iban => "[IBAN]",
            EntityKind::IpAddress => "[IP]",
            EntityKind::SaudiId | EntityKind::EmiratesId | EntityKind::EgyptianId => {
                "[NATIONAL_ID]"
            }
            EntityKind::UsSsn => "[SSN]",
        }
    }

    /// When two detections overlap, the higher priority wins: a checksum or a structure beats a
    /// format (a Luhn-valid 16-digit card is not a phone number).
    pub(crate) fn priority(self) -> u8 {
        match self {
            EntityKind::Email => 9,
            EntityKind::Iban => 8,
            EntityKind::CreditCard | EntityKind::EmiratesId | EntityKind::EgyptianId => 7,
            EntityKind::UsSsn | EntityKind::SaudiId => 6,
            EntityKind::IpAddress => 5,
            EntityKind::Phone => 3,
        }
    }
}

impl fmt::Display for EntityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A piece of personal data found in a text: its kind and its byte span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub kind: EntityKind,
    pub span: Range<usize>,
}
