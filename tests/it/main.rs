//! The integration tests, one binary: each file is a module, `support` holds
//! their shared fixtures. (The `OpenXR` tests against Monado and the desk
//! window tests under Xvfb are binaries of their own: they start servers
//! and run in their own environments.)

mod support;

mod bake_resume;
mod blendshape;
mod blendshape_character;
mod cli;
mod contact_drop;
mod contact_push;
mod crash_kill;
mod disk_full;
mod export;
mod fem_adapt;
mod fem_adapt_blend;
mod fem_adapt_conformed;
mod fem_adapt_grab;
mod fem_bake;
mod fem_flesh;
mod fem_flesh_adaptive;
mod fem_flesh_app;
mod fem_flesh_parts;
mod fem_gpu;
mod fem_import;
mod fem_morph;
mod fem_nonlinear;
mod fem_physics;
mod fem_quadrature;
mod fem_snap;
mod frame_loop;
mod fuzz_found;
mod io_autosave;
mod io_files;
mod mesh_import;
mod modal_flesh;
mod render_cli;
mod render_gpu;
mod samples;
mod skin_contact;
mod skin_fidelity;
mod skin_physics;
mod tool_abuse;
mod tools_script;
mod view_calibration;
