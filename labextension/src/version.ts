/**
 * The npm package this extension is, as named by the Python widget's
 * `_model_module`/`_view_module`. Kept apart from widget.ts so the plugin
 * can register the module without loading `@jupyter-widgets/base`.
 */
export const MODULE_NAME = 'unified-exec-kernel';

/** Must equal package.json's version (a test checks it). */
export const MODULE_VERSION = '0.1.0';
