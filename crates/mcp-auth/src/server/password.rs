//! Argon2 password hashes computed in a work area mapped for that one hash
//! and unmapped right after it.
//!
//! Argon2id with its default parameters fills 19 MiB per hash. Taken from
//! the heap, that memory stays with the allocator once freed (mimalloc
//! keeps it until the thread that freed it allocates again, which on an
//! idle server is never; glibc raises its mapping threshold and keeps the
//! next one): a server that hashed its users' passwords at start idled
//! 20 MiB larger than one that did not. A private anonymous mapping goes
//! back to the system on `munmap`, whatever the global allocator.

use argon2::password_hash::{Output, PasswordHash, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use memmap2::MmapMut;

use super::AuthServerError;

/// Memory for one hash: `blocks` Argon2 blocks in a fresh mapping.
struct WorkArea {
    map: MmapMut,
    blocks: usize,
}

impl WorkArea {
    fn new(blocks: usize) -> Result<Self, AuthServerError> {
        let len = blocks
            .checked_mul(size_of::<Block>())
            .ok_or_else(|| AuthServerError::Config("Argon2 memory cost too large".into()))?;
        let map = MmapMut::map_anon(len.max(1))
            .map_err(|e| AuthServerError::Config(format!("Argon2 work area: {e}")))?;
        // Mappings start on a page boundary, which is more than a block's
        // alignment; checked rather than assumed.
        if !(map.as_ptr() as usize).is_multiple_of(align_of::<Block>()) {
            return Err(AuthServerError::Config(
                "Argon2 work area is misaligned".into(),
            ));
        }
        Ok(WorkArea { map, blocks })
    }
}

impl AsMut<[Block]> for WorkArea {
    fn as_mut(&mut self) -> &mut [Block] {
        // SAFETY: the mapping is at least `blocks * size_of::<Block>()`
        // bytes, aligned for `Block` (checked in `new`), zero-filled by
        // the system, and a `Block` is plain `u64`s, for which every bit
        // pattern is valid. The slice borrows `self` mutably, so nothing
        // else reaches the mapping while it lives.
        unsafe {
            std::slice::from_raw_parts_mut(self.map.as_mut_ptr().cast::<Block>(), self.blocks)
        }
    }
}

/// Runs `argon2` over `password` and `salt` into `out`, in a mapped work
/// area.
fn compute(
    argon2: &Argon2<'_>,
    params: &Params,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> Result<(), AuthServerError> {
    let area = WorkArea::new(params.block_count())?;
    argon2
        .hash_password_into_with_memory(password, salt, out, area)
        .map_err(|e| AuthServerError::Config(format!("password hash: {e}")))
}

/// Hashes `password` with Argon2id (default parameters) and a random salt
/// into a PHC string.
pub(crate) fn hash(password: &str) -> Result<String, AuthServerError> {
    let mut salt = [0u8; 16];
    rand::Rng::fill(&mut rand::rng(), &mut salt);
    let salt =
        SaltString::encode_b64(&salt).map_err(|e| AuthServerError::Config(format!("salt: {e}")))?;
    let params = Params::default();
    let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
    let mut salt_bytes = [0u8; 64];
    let salt_bytes = salt
        .as_salt()
        .decode_b64(&mut salt_bytes)
        .map_err(|e| AuthServerError::Config(format!("salt: {e}")))?;
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    compute(&argon2, &params, password.as_bytes(), salt_bytes, &mut out)?;
    let output =
        Output::new(&out).map_err(|e| AuthServerError::Config(format!("password hash: {e}")))?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: (&params)
            .try_into()
            .map_err(|e| AuthServerError::Config(format!("password hash: {e}")))?,
        salt: Some(salt.as_salt()),
        hash: Some(output),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the Argon2 PHC string `phc`; the comparison
/// takes the same time wherever the outputs differ.
pub(crate) fn verify(phc: &str, password: &str) -> bool {
    let check = || -> Option<bool> {
        let parsed = PasswordHash::new(phc).ok()?;
        let algorithm = Algorithm::try_from(parsed.algorithm).ok()?;
        let version = match parsed.version {
            Some(v) => Version::try_from(v).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&parsed).ok()?;
        let expected = parsed.hash?;
        let mut salt = [0u8; 64];
        let salt = parsed.salt?.decode_b64(&mut salt).ok()?;
        let argon2 = Argon2::new(algorithm, version, params.clone());
        let mut out = vec![0u8; expected.len()];
        compute(&argon2, &params, password.as_bytes(), salt, &mut out).ok()?;
        // `Output`'s equality is constant-time.
        Some(Output::new(&out).ok()? == expected)
    };
    check().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use argon2::PasswordHasher;

    use super::*;

    #[test]
    fn hashes_verify_and_match_the_argon2_crate() {
        let phc = hash("correct horse").unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(verify(&phc, "correct horse"));
        assert!(!verify(&phc, "correct horsf"));
        // A hash made by the argon2 crate itself (other parameters) verifies.
        let salt = SaltString::encode_b64(b"sixteen byte sal").unwrap();
        let other = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(1024, 1, 1, None).unwrap(),
        )
        .hash_password(b"hunter2", &salt)
        .unwrap()
        .to_string();
        assert!(verify(&other, "hunter2"));
        assert!(!verify(&other, "hunter3"));
        // And ours verifies with the argon2 crate.
        let parsed = PasswordHash::new(&phc).unwrap();
        assert!(
            argon2::PasswordVerifier::verify_password(
                &Argon2::default(),
                b"correct horse",
                &parsed
            )
            .is_ok()
        );
        assert!(!verify("not a hash", "x"));
    }
}
