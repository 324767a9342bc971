"""The TypeScript target: codecs (``codec``), machines (``machines``) and the npm
package's own files, from the same plan as Python."""
