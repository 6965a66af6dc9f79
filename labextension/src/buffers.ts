/**
 * A widget message's binary buffer as bytes: hosts hand them over as
 * DataView (ipywidgets), ArrayBuffer or Uint8Array. Bundled into both the
 * loader and the module, so it imports nothing.
 */
export function asBytes(buffer: unknown): Uint8Array {
  if (buffer instanceof Uint8Array) {
    return buffer;
  }
  if (ArrayBuffer.isView(buffer)) {
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }
  return new Uint8Array(buffer as ArrayBuffer);
}
