import { describe, expect, it } from "vitest";
import { bytesText, parseByteSize } from "./byte-size.js";

describe("sizes as people read and type them", () => {
  it("reads out in binary units, exact below a KiB", () => {
    expect(bytesText(0)).toBe("0 bytes");
    expect(bytesText(1023)).toBe("1023 bytes");
    expect(bytesText(1536)).toBe("1.5 KiB");
    expect(bytesText(10 * 1024 ** 3)).toBe("10 GiB");
  });

  it("takes bytes, binary and decimal units, and refuses anything else", () => {
    expect(parseByteSize("1048576")).toBe(1048576);
    expect(parseByteSize(" 500 MiB ")).toBe(500 * 1024 ** 2);
    expect(parseByteSize("2GB")).toBe(2_000_000_000);
    expect(parseByteSize("1.5g")).toBe(1.5 * 1024 ** 3);
    for (const bad of ["", "0", "-1", "lots", "5 parsecs", "1e9", "0.1"]) expect(parseByteSize(bad), bad).toBeUndefined();
  });
});
