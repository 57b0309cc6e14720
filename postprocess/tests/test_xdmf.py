"""The .xdmf sidecars of a real run open in ParaView/VisIt: well-formed XML (xmllint), a
3DCoRectMesh of N^3 nodes with origin 0 and spacing 2 pi/N, node-centred attributes, and every
referenced HDF5 dataset exists (opened through h5py) with the stated dimensions, type and
index order (docs/style.md "Fields for ParaView/VisIt")."""

import glob
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest


def xdmf_files(run):
    files = sorted(glob.glob(os.path.join(run, "*.xdmf")))
    assert os.path.join(run, "fields.xdmf") in files
    assert len(files) == 1 + len(glob.glob(os.path.join(run, "fields_*.h5")))
    return files


def test_xmllint_well_formed(spectral_run):
    if shutil.which("xmllint") is None:
        pytest.skip("xmllint not installed (Debian package libxml2-utils, installed by scripts/setup.sh)")
    for path in xdmf_files(spectral_run):
        r = subprocess.run(["xmllint", "--noout", path], capture_output=True, text=True)
        assert r.returncode == 0, f"{path}: {r.stderr}"


def uniform_grids(root):
    return [g for g in root.iter("Grid") if g.get("GridType") == "Uniform"]


def test_every_referenced_dataset_exists_with_stated_dimensions(spectral_run):
    checked = 0
    for path in xdmf_files(spectral_run):
        root = ET.parse(path).getroot()
        assert root.tag == "Xdmf" and root.get("Version") == "3.0"
        grids = uniform_grids(root)
        assert grids, f"{path}: no uniform grid"
        for grid in grids:
            topo = grid.find("Topology")
            assert topo.get("TopologyType") == "3DCoRectMesh"
            n = [int(v) for v in topo.get("Dimensions").split()]
            assert len(n) == 3 and len(set(n)) == 1
            geo = grid.find("Geometry")
            assert geo.get("GeometryType") == "ORIGIN_DXDYDZ"
            origin, spacing = (np.array(item.text.split(), float) for item in geo.findall("DataItem"))
            np.testing.assert_array_equal(origin, 0.0)
            np.testing.assert_allclose(spacing, 2 * np.pi / n[0], rtol=1e-15)
            names = set()
            for attr in grid.findall("Attribute"):
                names.add(attr.get("Name"))
                assert attr.get("Center") == "Node"
                item = attr.find("DataItem")
                assert item.get("Format") == "HDF" and item.get("NumberType") == "Float"
                dims = tuple(int(v) for v in item.get("Dimensions").split())
                assert dims[:3] == tuple(n)
                if attr.get("AttributeType") == "Vector":
                    assert dims[3:] == (3,)
                else:
                    assert attr.get("AttributeType") == "Scalar" and len(dims) == 3
                h5_name, dataset = item.text.strip().split(":", 1)
                assert not os.path.isabs(h5_name), "HDF paths must be relative to the .xdmf"
                with h5py.File(os.path.join(os.path.dirname(path), h5_name), "r") as f:
                    assert dataset in f, f"{path}: {h5_name}:{dataset} missing"
                    ds = f[dataset]
                    assert ds.shape == dims, f"{h5_name}:{dataset} is {ds.shape}, the .xdmf says {dims}"
                    assert ds.dtype.itemsize == int(item.get("Precision")) and ds.dtype.kind == "f"
                    assert np.all(np.isfinite(ds[()]))
                checked += 1
            assert names == {"velocity", "vorticity", "Q"}, names
    assert checked > 0


def test_index_order_is_z_y_x(spectral_run):
    # x fastest: d u_x / dx computed along the last axis of [z][y][x][c] must match the x part
    # of the divergence-free condition, i.e. du/dx + dv/dy + dw/dz = 0 only with this order.
    path = os.path.join(spectral_run, "fields_0001.h5")
    with h5py.File(path, "r") as f:
        u = f["/spectral/velocity"][()]
    n = u.shape[0]
    k = np.fft.fftfreq(n, 1.0 / n)

    def ddx(a, axis):
        shape = [1, 1, 1]
        shape[axis] = n
        return np.real(np.fft.ifft(1j * k.reshape(shape) * np.fft.fft(a, axis=axis), axis=axis))

    div = ddx(u[..., 0], 2) + ddx(u[..., 1], 1) + ddx(u[..., 2], 0)
    wrong = ddx(u[..., 0], 0) + ddx(u[..., 1], 1) + ddx(u[..., 2], 2)
    assert np.sqrt(np.mean(div**2)) < 1e-8 * np.sqrt(np.mean(wrong**2))


def test_temporal_collection_covers_every_fields_file_in_time_order(spectral_run):
    root = ET.parse(os.path.join(spectral_run, "fields.xdmf")).getroot()
    (top,) = [g for g in root.iter("Grid") if g.get("CollectionType") == "Temporal"]
    steps = top.findall("Grid")
    files = sorted(glob.glob(os.path.join(spectral_run, "fields_*.h5")))
    assert len(steps) == len(files) == 3
    times = [float(g.find("Time").get("Value")) for g in steps]
    assert times == sorted(times)
    for g, fname, t in zip(steps, files, times):
        with h5py.File(fname, "r") as f:
            assert f.attrs["t"] == pytest.approx(t, rel=1e-15)
