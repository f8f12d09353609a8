//! Pagination cursors a client cannot forge: the offset and the catalog
//! generation, authenticated with an HMAC under a key only the server knows.
//! A tampered cursor, or one from before the list changed, is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use mcp_schema::ErrorObject;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const TAG_LEN: usize = 16;

/// Signs and checks opaque tokens (cursors, request state) for one server.
#[derive(Clone)]
pub struct Signer {
    key: [u8; 32],
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer { .. }")
    }
}

impl Signer {
    /// A signer with a fresh random key.
    pub fn random() -> Self {
        Signer {
            key: rand::random(),
        }
    }

    /// A signer whose key is derived from `secret`: every server given the
    /// same secret (several instances behind one load balancer) accepts
    /// the cursors and request states the others issued.
    pub fn from_secret(secret: &[u8]) -> Self {
        let mut mac = HmacSha256::new_from_slice(b"mcp-server state key")
            .unwrap_or_else(|_| unreachable!("any key length works"));
        mac.update(secret);
        Signer {
            key: mac.finalize().into_bytes().into(),
        }
    }

    fn tag(&self, purpose: &[u8], payload: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = HmacSha256::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("any key length works"));
        mac.update(purpose);
        mac.update(&[0]);
        mac.update(payload);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// `payload` with its tag, as URL-safe base64.
    pub fn seal(&self, purpose: &str, payload: &[u8]) -> String {
        let mut bytes = payload.to_vec();
        bytes.extend_from_slice(&self.tag(purpose.as_bytes(), payload));
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The payload of a token sealed for `purpose`, if it is authentic.
    pub fn open(&self, purpose: &str, token: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        if bytes.len() < TAG_LEN {
            return None;
        }
        let (payload, tag) = bytes.split_at(bytes.len() - TAG_LEN);
        let mut mac = HmacSha256::new_from_slice(&self.key).ok()?;
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac.verify_truncated_left(tag).ok()?;
        Some(payload.to_vec())
    }

    /// A cursor for the page of list `kind` starting at `offset`.
    pub fn cursor(&self, kind: &str, generation: u64, offset: usize) -> String {
        let mut payload = generation.to_be_bytes().to_vec();
        payload.extend_from_slice(&(offset as u64).to_be_bytes());
        self.seal(kind, &payload)
    }

    /// The offset a cursor points at. -32602 when it was not made by this
    /// server for this list, or the list changed since.
    pub fn offset(&self, kind: &str, generation: u64, cursor: &str) -> Result<usize, ErrorObject> {
        let payload = self
            .open(kind, cursor)
            .filter(|p| p.len() == 16)
            .ok_or_else(|| ErrorObject::invalid_params("invalid cursor"))?;
        let made_at = u64::from_be_bytes(payload[..8].try_into().unwrap_or_default());
        if made_at != generation {
            return Err(ErrorObject::invalid_params(
                "stale cursor: the list changed; start again",
            ));
        }
        Ok(u64::from_be_bytes(payload[8..].try_into().unwrap_or_default()) as usize)
    }
}

/// One page of `items` starting at `cursor`, and the cursor of the next.
pub fn page<T: Clone>(
    signer: &Signer,
    kind: &str,
    generation: u64,
    items: &[T],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = match cursor {
        Some(c) => signer.offset(kind, generation, c)?,
        None => 0,
    };
    if start > items.len() {
        return Err(ErrorObject::invalid_params("invalid cursor"));
    }
    let end = (start + page_size.max(1)).min(items.len());
    let next = (end < items.len()).then(|| signer.cursor(kind, generation, end));
    Ok((items[start..end].to_vec(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signers_of_one_secret_accept_each_others_tokens() {
        let a = Signer::from_secret(b"a secret of the deployment");
        let b = Signer::from_secret(b"a secret of the deployment");
        let other = Signer::from_secret(b"another secret altogether");
        let token = a.seal("cursor", b"payload");
        assert_eq!(b.open("cursor", &token).as_deref(), Some(&b"payload"[..]));
        assert_eq!(other.open("cursor", &token), None);
        assert_eq!(Signer::random().open("cursor", &token), None);
    }

    #[test]
    fn pages_walk_everything_once() {
        let signer = Signer::random();
        let items: Vec<u32> = (0..7).collect();
        let mut seen = Vec::new();
        let mut cursor = None;
        loop {
            let (chunk, next) = page(&signer, "tools", 1, &items, cursor.as_deref(), 3).unwrap();
            seen.extend(chunk);
            match next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, items);
    }

    #[test]
    fn forged_stale_and_foreign_cursors_are_refused() {
        let signer = Signer::random();
        let good = signer.cursor("tools", 1, 3);
        assert_eq!(signer.offset("tools", 1, &good).unwrap(), 3);
        let mut forged = good.clone().into_bytes();
        forged[2] ^= 1;
        let forged = String::from_utf8(forged).unwrap();
        for bad in [forged.as_str(), "garbage", ""] {
            assert_eq!(signer.offset("tools", 1, bad).unwrap_err().code, -32602);
        }
        assert!(
            signer
                .offset("tools", 2, &good)
                .unwrap_err()
                .message
                .contains("stale")
        );
        assert!(signer.offset("prompts", 1, &good).is_err());
        assert!(Signer::random().offset("tools", 1, &good).is_err());
    }
}
