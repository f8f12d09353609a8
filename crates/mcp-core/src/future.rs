//! Boxed futures: what handlers and transports return where the future's
//! type cannot be named.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The future `make` returns, boxed. `Box::pin(make())` builds the future
/// on the stack and then copies it into the box, whole, which for the
/// large future of a request costs as much as a small parse; here the box
/// comes first, and the optimizer builds the future in it (as it does for
/// the futures of a request, by instruction count).
#[inline(always)]
pub fn box_future<'a, F>(make: impl FnOnce() -> F) -> BoxFuture<'a, F::Output>
where
    F: Future + Send + 'a,
{
    let boxed: Box<F> = Box::write(Box::new_uninit(), make());
    Box::into_pin(boxed)
}
