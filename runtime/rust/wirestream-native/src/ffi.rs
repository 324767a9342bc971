//! A record batch handed to pyarrow through the Arrow C Data Interface
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>): one `ArrowArray` tree per
//! batch, imported by one call (`pa.RecordBatch._import_from_c(address, schema)`, the
//! schema being the Spark frame log's, already a `pyarrow.Schema`), where lending each
//! buffer (`pa.foreign_buffer`) and assembling each array (`pa.Array.from_buffers`) took
//! ~100 pyarrow calls a batch.
//!
//! The only unsafe code of the extension is here, and it is the interface's contract:
//! `#[repr(C)]` structs of raw pointers, and a `release` callback that pyarrow calls (from
//! any thread) once it no longer needs an array. Everything an array points to is owned by
//! its `private_data` (a `Private`), and every array of a batch holds a reference to the
//! batch's buffers (`Arc<M>`), so an array that the consumer moves out of its parent (the
//! interface allows it) stays valid after the parent is released.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

/// The C Data Interface's `struct ArrowArray`, field for field.
#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// One array of a batch as the safe code describes it: buffers by address (0: absent,
/// as a validity bitmap of an array without nulls is), in the layout's order.
pub struct Node {
    pub length: usize,
    pub null_count: usize,
    pub buffers: Vec<usize>,
    pub children: Vec<Node>,
}

/// What an exported array keeps alive: the arrays of pointers it points to, its children
/// (their `ArrowArray`s boxed, so their addresses hold), and the batch's memory.
struct Private {
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
    _memory: Arc<dyn Send + Sync>,
}

/// The interface's release callback: releases the children still there (a child the
/// consumer moved out has `release` NULL in its old place, and is released by the
/// consumer), frees what the array owns and marks it released.
unsafe extern "C" fn release(array: *mut ArrowArray) {
    // SAFETY: pyarrow calls this with an array this module built (`export`), once; a
    // released array (release NULL) is left alone, as the interface asks.
    unsafe {
        let Some(array) = array.as_mut() else {
            return;
        };
        if array.release.is_none() {
            return;
        }
        let private = Box::from_raw(array.private_data.cast::<Private>());
        for &child in &private.children {
            if let Some(release_child) = (*child).release {
                release_child(child);
            }
            drop(Box::from_raw(child));
        }
        drop(private);
        array.release = None;
        array.private_data = ptr::null_mut();
    }
}

fn build(node: Node, memory: &Arc<dyn Send + Sync>) -> ArrowArray {
    let children = node
        .children
        .into_iter()
        .map(|child| Box::into_raw(Box::new(build(child, memory))))
        .collect();
    let buffers = node
        .buffers
        .iter()
        .map(|&address| address as *const c_void)
        .collect();
    let mut private = Box::new(Private {
        buffers,
        children,
        _memory: memory.clone(),
    });
    ArrowArray {
        length: node.length as i64,
        null_count: node.null_count as i64,
        offset: 0,
        n_buffers: private.buffers.len() as i64,
        n_children: private.children.len() as i64,
        // the vectors' heap memory does not move with the box that holds them
        buffers: private.buffers.as_mut_ptr(),
        children: private.children.as_mut_ptr(),
        dictionary: ptr::null_mut(),
        release: Some(release),
        private_data: Box::into_raw(private).cast::<c_void>(),
    }
}

/// The `ArrowArray` a batch is exported into: its address is what Python imports from,
/// and pyarrow moves the array out of it (marking it released), so one shell serves every
/// batch of a frame log.
pub struct Shell(Box<ArrowArray>);

// SAFETY: the shell is touched only through `&mut` (a `FrameLog`'s `&mut self`): a shared
// `&Shell` reads nothing; and what it points to is released by the `release` callback,
// which the interface allows on any thread.
unsafe impl Send for Shell {}
unsafe impl Sync for Shell {}

impl Shell {
    pub fn new() -> Self {
        Shell(Box::new(ArrowArray {
            length: 0,
            null_count: 0,
            offset: 0,
            n_buffers: 0,
            n_children: 0,
            buffers: ptr::null_mut(),
            children: ptr::null_mut(),
            dictionary: ptr::null_mut(),
            release: None,
            private_data: ptr::null_mut(),
        }))
    }

    /// Export `node` (its buffers owned by `memory`, which lives as long as any array of
    /// the batch) into the shell; the address to import from. A batch exported before and
    /// never imported (a Python error in between) is released first.
    pub fn export<M: Send + Sync + 'static>(&mut self, node: Node, memory: M) -> usize {
        self.release();
        let memory: Arc<dyn Send + Sync> = Arc::new(memory);
        *self.0 = build(node, &memory);
        ptr::from_mut::<ArrowArray>(&mut *self.0) as usize
    }

    fn release(&mut self) {
        if let Some(release) = self.0.release {
            // SAFETY: an array `build` made and nobody moved out (release not NULL).
            unsafe { release(ptr::from_mut::<ArrowArray>(&mut *self.0)) }
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.release();
    }
}
